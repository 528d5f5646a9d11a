/* symbols_table (report/symbols/symbols_table.c): the symbol table sorted by address must
 * name every address it answers as libdwfl's dwfl_module_addrname does, on real objects
 * (libc's dynamic symbols, this test program's full table, pyenv's libpython and Debian's
 * libtorch_cpu where present), on a block of hand-written symbols below (nested,
 * aliased, weak, local and global, and labels without a size), and on an object written
 * here whose symbols' order is chosen (libdwfl's choice depends on it). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols_table.h"

/* Hand-written code symbols, laid out byte by byte (nop = 1 byte):
 *   symt_outer     global, 16 bytes, holds everything up to symt_after
 *   symt_alias     weak, the same start, 16 bytes; symt_short local, the same start, 4
 *   symt_label     a global label without a size, inside symt_outer
 *   symt_inner     a local symbol of 3 bytes nested inside symt_outer
 *   symt_weak      a weak symbol of 2 bytes nested inside symt_outer, after symt_inner
 *   symt_after     a local label without a size after symt_outer's end, then padding
 *   symt_tail      a global symbol of 2 bytes; symt_end a global label after it */
__asm__(".text\n"
        ".globl symt_outer\n.type symt_outer,@function\n"
        ".weak symt_alias\n.type symt_alias,@function\n"
        ".type symt_short,@function\n"
        "symt_outer:\nsymt_alias:\nsymt_short:\n"
        "nop\nnop\nnop\nnop\n"
        ".size symt_short, 4\n"
        ".globl symt_label\nsymt_label:\n"
        "nop\nnop\n"
        ".type symt_inner,@function\nsymt_inner:\nnop\nnop\nnop\n.size symt_inner, 3\n"
        ".weak symt_weak\n.type symt_weak,@function\nsymt_weak:\nnop\nnop\n.size symt_weak, 2\n"
        "nop\nnop\nnop\nnop\nnop\n"
        ".size symt_outer, 16\n.size symt_alias, 16\n"
        "symt_after:\nnop\nnop\nnop\nnop\n"
        ".globl symt_tail\n.type symt_tail,@function\nsymt_tail:\nnop\nnop\n.size symt_tail, 2\n"
        ".globl symt_end\nsymt_end:\nnop\nnop\nnop\nnop\n");
extern char symt_outer[];

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct checked {
    size_t asked, answered;
};

static void check(Dwfl_Module *mod, const struct symbols_table *t, uint64_t address,
                  struct checked *c)
{
    const char *ours;
    c->asked++;
    if (!symbols_table_name(t, address, &ours))
        return;
    c->answered++;
    const char *theirs = dwfl_module_addrname(mod, address);
    cr_assert((ours == NULL) == (theirs == NULL) && (!ours || strcmp(ours, theirs) == 0),
              "%#llx: ours %s, libdwfl's %s", (unsigned long long)address, ours ? ours : "(none)",
              theirs ? theirs : "(none)");
}

/* Checks n addresses spread over the module, and each sized symbol's first and last byte
 * and the byte after it for up to edges symbols. */
static struct checked check_module(const char *path, uint64_t bias, size_t n, size_t edges,
                                   uint64_t from, uint64_t to)
{
    struct checked c = {0, 0};
    Dwfl *dwfl = dwfl_begin(&callbacks);
    cr_assert(dwfl);
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_elf(dwfl, path, path, -1, bias, false);
    cr_assert(mod, "%s: %s", path, dwfl_errmsg(-1));
    dwfl_report_end(dwfl, NULL, NULL);
    struct symbols_table *t = symbols_table_new(mod);
    cr_assert(t, "%s: no table", path);
    Dwarf_Addr lo, hi;
    dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
    if (from < to) {
        lo = from;
        hi = to;
    }
    for (size_t i = 0; i < n; i++)
        check(mod, t, lo + (hi - lo) * i / n, &c);
    int syms = dwfl_module_getsymtab(mod);
    size_t step = edges && (size_t)syms > edges ? (size_t)syms / edges : 1;
    for (int i = 1; edges && i < syms; i += (int)step) {
        GElf_Sym sym;
        GElf_Addr value;
        if (!dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL) || !value)
            continue;
        check(mod, t, value, &c);
        if (sym.st_size) {
            check(mod, t, value + sym.st_size - 1, &c);
            check(mod, t, value + sym.st_size, &c);
        }
    }
    symbols_table_free(t);
    dwfl_end(dwfl);
    return c;
}

Test(symbols_table, hand_written_symbols_are_named_as_libdwfl_names_them_at_every_byte)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(len > 0);
    self[len] = '\0';
    /* this program as loaded: the block's run-time address and the bias that maps it */
    Dl_info info;
    cr_assert(dladdr(symt_outer, &info));
    uint64_t bias = (uint64_t)(uintptr_t)info.dli_fbase;
    uint64_t at = (uint64_t)(uintptr_t)symt_outer;
    /* every byte of symt_outer is answered (its symbols hold them), and agrees */
    struct checked c = check_module(self, bias, 16, 0, at, at + 16);
    cr_assert_eq(c.answered, 16, "answered %zu of %zu", c.answered, c.asked);
    /* the bytes after its end are near labels without a size (symt_after, symt_end):
     * libdwfl's; any answered there agrees */
    c = check_module(self, bias, 48, 0, at - 8, at + 40);
    cr_assert_eq(c.asked, 48);
    cr_assert_geq(c.answered, 18, "answered %zu of %zu", c.answered, c.asked);
    /* the whole program, its data too (past the labels: libdwfl's; 68 % answered) */
    struct checked whole = check_module(self, bias, 4000, 2000, 0, 0);
    cr_assert_geq(whole.answered * 2, whole.asked, "answered %zu of %zu", whole.answered,
                  whole.asked);
}

Test(symbols_table, libc_dynamic_symbols_are_named_as_libdwfl_names_them)
{
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    cr_assert_eq(access(libc, R_OK), 0);
    struct checked c = check_module(libc, 0x7f0000000000ull, 5000, 1000, 0, 0);
    /* its assembly routines' labels leave some to libdwfl (87 % answered, Debian 12) */
    cr_assert_geq(c.answered * 10, c.asked * 8, "answered %zu of %zu", c.answered, c.asked);
}

/* Large objects where they are installed (pyenv, python3-torch); libtorch_cpu's 35,000
 * dynamic symbols cost libdwfl about 0.5 ms an address, so it is asked fewer. */
Test(symbols_table, libpython_and_libtorch_are_named_as_libdwfl_names_them)
{
    const char *objects[] = {"/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0",
                             "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"};
    size_t n[] = {5000, 300}, edges[] = {1000, 300};
    int checked = 0;
    for (int i = 0; i < 2; i++) {
        if (access(objects[i], R_OK) != 0)
            continue;
        struct checked c = check_module(objects[i], 0x7f0000000000ull, n[i], edges[i], 0, 0);
        cr_assert_geq(c.answered * 10, c.asked * 9, "%s: answered %zu of %zu", objects[i],
                      c.answered, c.asked);
        checked++;
    }
    if (!checked)
        cr_skip_test("neither pyenv's libpython3.11 nor Debian's libtorch_cpu is installed");
}

/* ---- a crafted object: symbols in an order chosen here ---- */

struct crafted_sym {
    const char *name;
    uint64_t value, size;
    int bind, type;
};

/* Writes an x86-64 ET_DYN at path: one executable section at 0x1000 (0x100 bytes) and a
 * .symtab holding syms in this order after the null symbol; the first first_global - 1 are
 * the locals. */
static void write_crafted(const char *path, const struct crafted_sym *syms, int n, int first_global)
{
    static Elf64_Sym raw[128];
    static char strtab[4096], text[0x100];
    static char shstrtab[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
    cr_assert(n + 1 <= 128);
    size_t used = 1;
    memset(raw, 0, sizeof raw);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(syms[i].name) + 1;
        cr_assert(used + len <= sizeof strtab);
        memcpy(strtab + used, syms[i].name, len);
        raw[i + 1] = (Elf64_Sym){.st_name = (Elf64_Word)used,
                                 .st_info = ELF64_ST_INFO(syms[i].bind, syms[i].type),
                                 .st_shndx = 1,
                                 .st_value = syms[i].value,
                                 .st_size = syms[i].size};
        used += len;
    }
    cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
    cr_assert(e);
    Elf64_Ehdr *eh = elf64_newehdr(e);
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_version = EV_CURRENT;
    Elf64_Phdr *ph = elf64_newphdr(e, 1);
    const struct {
        void *buf;
        size_t size;
        Elf_Type type;
        Elf64_Word sh_type, sh_name;
    } sections[] = {
        {text, sizeof text, ELF_T_BYTE, SHT_PROGBITS, 1},
        {raw, (size_t)(n + 1) * sizeof *raw, ELF_T_SYM, SHT_SYMTAB, 7},
        {strtab, used, ELF_T_BYTE, SHT_STRTAB, 15},
        {shstrtab, sizeof shstrtab, ELF_T_BYTE, SHT_STRTAB, 23},
    };
    Elf64_Shdr *shdr[4];
    for (int i = 0; i < 4; i++) {
        Elf_Scn *scn = elf_newscn(e);
        Elf_Data *d = elf_newdata(scn);
        d->d_buf = sections[i].buf;
        d->d_size = sections[i].size;
        d->d_type = sections[i].type;
        d->d_align = sections[i].type == ELF_T_SYM ? 8 : 1;
        shdr[i] = elf64_getshdr(scn);
        shdr[i]->sh_type = sections[i].sh_type;
        shdr[i]->sh_name = sections[i].sh_name;
    }
    shdr[0]->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
    shdr[0]->sh_addr = 0x1000;
    shdr[1]->sh_link = 3; /* .strtab */
    shdr[1]->sh_info = (Elf64_Word)first_global;
    shdr[1]->sh_entsize = sizeof *raw;
    eh->e_shstrndx = 4;
    cr_assert_geq(elf_update(e, ELF_C_NULL), 0, "%s", elf_errmsg(-1));
    *ph = (Elf64_Phdr){.p_type = PT_LOAD,
                       .p_flags = PF_R | PF_X,
                       .p_offset = shdr[0]->sh_offset,
                       .p_vaddr = 0x1000,
                       .p_paddr = 0x1000,
                       .p_filesz = sizeof text,
                       .p_memsz = sizeof text,
                       .p_align = 0x1000};
    elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
    cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
    elf_end(e);
    close(fd);
}

Test(symbols_table, crafted_orders_give_libdwfl_answers_or_ask_it)
{
    static char names[66][8];
    struct crafted_sym syms[80];
    int n = 0;
    syms[n++] = (struct crafted_sym){"loc_f", 0x1000, 0x40, STB_LOCAL, STT_FUNC};
    int first_global = n + 1;
    /* a weak symbol listed before the global that holds it and starts earlier: libdwfl
     * keeps the global (it binds better) */
    syms[n++] = (struct crafted_sym){"w_nested", 0x1010, 4, STB_WEAK, STT_FUNC};
    syms[n++] = (struct crafted_sym){"g_outer", 0x1008, 0x10, STB_GLOBAL, STT_FUNC};
    /* a global label inside loc_f only: libdwfl answers it and reads no local */
    syms[n++] = (struct crafted_sym){"g_label", 0x1030, 0, STB_GLOBAL, STT_NOTYPE};
    /* 66 globals at one start, h_i of 16 + i bytes: the first listed, the shortest, wins */
    for (int i = 0; i < 66; i++) {
        snprintf(names[i], sizeof names[i], "h_%d", i);
        syms[n++] =
            (struct crafted_sym){names[i], 0x1080, 0x10 + (uint64_t)i, STB_GLOBAL, STT_FUNC};
    }
    /* a symbol whose end wraps past the last address */
    syms[n++] = (struct crafted_sym){"top", 0xfffffffffffff000ull, 0x2000, STB_GLOBAL, STT_FUNC};
    char path[] = "/tmp/test_symbols_table.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_crafted(path, syms, n, first_global);
    Dwfl *dwfl = dwfl_begin(&callbacks);
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_elf(dwfl, "crafted", path, -1, 0, true);
    cr_assert(mod, "%s", dwfl_errmsg(-1));
    dwfl_report_end(dwfl, NULL, NULL);
    struct symbols_table *t = symbols_table_new(mod);
    cr_assert(t);
    /* answer: 1 the table must answer, 0 it must ask libdwfl, -1 either */
    const struct {
        uint64_t address;
        const char *want;
        int answer;
    } cases[] = {
        {0x1010, "g_outer", 1}, {0x1013, "g_outer", 1}, {0x1014, "g_outer", 1},
        {0x1030, "g_label", 0}, {0x1031, "loc_f", 1},   {0x1080, "h_0", 0},
        {0x108f, "h_0", 0},     {0x1090, "h_1", 0}, /* 65 hold it: more than the table folds */
        {0x10c0, "h_49", 1},    {0x10d0, "h_65", 1},    {0x10d8, NULL, 1},
        {UINT64_MAX, "top", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *theirs = dwfl_module_addrname(mod, cases[i].address), *ours = NULL;
        cr_assert((theirs == NULL) == (cases[i].want == NULL) &&
                      (!theirs || strcmp(theirs, cases[i].want) == 0),
                  "%#llx: libdwfl says %s, the case %s", (unsigned long long)cases[i].address,
                  theirs ? theirs : "(none)", cases[i].want ? cases[i].want : "(none)");
        int r = symbols_table_name(t, cases[i].address, &ours);
        cr_assert(cases[i].answer < 0 || r == cases[i].answer, "%#llx: answered %d",
                  (unsigned long long)cases[i].address, r);
        if (r)
            cr_assert((ours == NULL) == (theirs == NULL) && (!ours || strcmp(ours, theirs) == 0),
                      "%#llx: ours %s, libdwfl's %s", (unsigned long long)cases[i].address,
                      ours ? ours : "(none)", theirs ? theirs : "(none)");
    }
    symbols_table_free(t);
    dwfl_end(dwfl);
    unlink(path);
}

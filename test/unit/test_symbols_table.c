/* symbols_table (report/symbols/symbols_table.c): the symbol table sorted by address must
 * name every address it answers as libdwfl's dwfl_module_addrname does, on real objects
 * (libc's dynamic symbols, this test program's full table, pyenv's libpython and Debian's
 * libtorch_cpu where present) and on a block of hand-written symbols below: nested,
 * aliased, weak, local and global, and labels without a size. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
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

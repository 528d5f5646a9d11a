/* The PyTorch layer (see torch.h): the op stack and TORCH_OP records, the dlopen wrapper
 * that notices libtorch arriving, and the on-demand build of the C++ bridge.
 *
 * The op stack and what it records are in torch_ops.c.
 *
 * The bridge's source (torch_bridge.cpp and torch.h) is embedded in libprof.so with
 * .incbin below; it is built once per torch (key: the libtorch_cpu path, size, mtime and
 * a hash of the source) into $PROF_TORCH_CACHE and linked against that very libtorch_cpu:
 * torch loads it in a local scope, where a global symbol lookup would not find at::. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "layer.h"
#include "lifecycle.h"
#include "resolve.h"
#include "settings.h"
#include "torch.h"
#include "torch_cache.h"
#include "torch_memory.h"
#include "torch_ops.h"

#define PROF_EXPORT __attribute__((visibility("default")))

/* The embedded source; .incbin paths are relative to the repository root, where make runs
 * the compiler (preload.mk makes torch.o depend on both files). */
__asm__(".pushsection .rodata\n"
        "torch_bridge_cpp_text:\n"
        ".incbin \"preload/torch/torch_bridge.cpp\"\n"
        ".byte 0\n"
        "torch_h_text:\n"
        ".incbin \"preload/torch/torch.h\"\n"
        ".byte 0\n"
        ".popsection\n");
extern const char torch_bridge_cpp_text[] __attribute__((visibility("hidden")));
extern const char torch_h_text[] __attribute__((visibility("hidden")));

static int torch_enabled;
static int torch_shapes;
/* 0: libtorch not seen yet; 1: a thread is looking or installing; 2: done (installed or
 * given up, said once). */
static _Atomic int torch_state;

/* The op stack, the op trees and the spans live in torch_ops.c. */
static struct prof_torch_hooks torch_hooks = {PROF_TORCH_HOOKS_VERSION, 0, torch_ops_begin,
                                              torch_ops_end};

/* snprintf for paths: -1 (and an empty string) when the result would not fit. */
static int torch_pathf(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int torch_pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* ---- finding libtorch and its headers ---- */

typedef void *(*torch_dlopen_fn)(const char *, int);
static torch_dlopen_fn torch_real_dlopen;

struct torch_libs {
    char torch_cpu[PATH_MAX];
    char c10[PATH_MAX];
};

static int torch_find_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct torch_libs *libs = arg;
    char path[PATH_MAX];
    resolve_object_name(info->dlpi_name, path, sizeof path);
    if (!*path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!libs->torch_cpu[0] && strncmp(base, "libtorch_cpu.so", 15) == 0)
        snprintf(libs->torch_cpu, sizeof libs->torch_cpu, "%s", path);
    else if (!libs->c10[0] && strncmp(base, "libc10.so", 9) == 0)
        snprintf(libs->c10, sizeof libs->c10, "%s", path);
    return 0;
}

static int torch_is_file(const char *dir, const char *rel)
{
    char path[PATH_MAX];
    struct stat st;
    torch_pathf(path, sizeof path, "%s/%s", dir, rel);
    return stat(path, &st) == 0;
}

/* <prefix>/lib/libtorch_cpu.so (pip: torch/lib) -> <prefix>/include; Debian's
 * /usr/lib/<triplet> -> /usr/include. */
static int torch_find_headers(const char *libdir, char *inc, size_t len)
{
    static const char *const ups[] = {"/../include", "/../../include"};
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s", libdir, ups[i]);
        if (realpath(path, inc) && strlen(inc) < len &&
            torch_is_file(inc, "ATen/record_function.h"))
            return 0;
    }
    return -1;
}

/* The C++ ABI libtorch was built with, from a symbol whose mangling depends on it. */
static const char *torch_abi_flag(const char *torch_cpu)
{
    void *h = torch_real_dlopen(torch_cpu, RTLD_LAZY | RTLD_NOLOAD);
    const char *flag = "";
    if (!h) {
        dlerror();
        return flag;
    }
    if (dlsym(
            h,
            "_ZN2at14RecordFunction6beforeENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEl"))
        flag = "-D_GLIBCXX_USE_CXX11_ABI=1";
    else if (dlsym(h, "_ZN2at14RecordFunction6beforeESsl"))
        flag = "-D_GLIBCXX_USE_CXX11_ABI=0";
    dlerror();
    dlclose(h);
    return flag;
}

/* ---- the cache and the build ---- */

static uint64_t torch_fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The environment of the compiler: ours without libprof.so in it. */
static char **torch_compiler_env(void)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
            strncmp(environ[i], "PROF_DISABLE=", 13) != 0)
            env[k++] = environ[i];
    env[k++] = "PROF_DISABLE=1";
    env[k] = NULL;
    return env;
}

/* Runs argv with stdout and stderr into log_fd (opened by torch_cache_open_for_write:
 * never through a link); returns the exit status, or -1. */
static int torch_run(char *const argv[], int log_fd)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
    char **env = torch_compiler_env();
    pid_t pid;
    int rc = env ? lifecycle_spawnp_unprofiled(&pid, argv[0], &fa, NULL, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -2; /* the program reaped it (SIGCHLD handler): judge by the output */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Makes a fresh source folder in the cache and writes the bridge's source into it.
 * Returns its fd (name in name), or -1. */
static int torch_write_source(int dirfd, const char *key, char *name, size_t len)
{
    for (int k = 0; k < 100; k++) { /* a leftover of a crashed build with this pid */
        snprintf(name, len, "torch-bridge-%s.src.%ld.%d", key, (long)getpid(), k);
        if (torch_cache_mkdir(dirfd, name) == 0)
            break;
        if (errno != EEXIST || k == 99)
            return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (torch_cache_write_file(fd, "torch_bridge.cpp", torch_bridge_cpp_text) != 0 ||
        torch_cache_write_file(fd, "torch.h", torch_h_text) != 0) {
        int saved = errno;
        unlinkat(fd, "torch_bridge.cpp", 0);
        close(fd);
        unlinkat(dirfd, name, AT_REMOVEDIR);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Builds the bridge into so_name (absent) in the checked cache folder dirfd (path dir).
 * Returns 0, or -1 with why in err. */
static int torch_build(const struct torch_libs *libs, const char *libdir, const char *inc,
                       int dirfd, const char *dir, const char *key, const char *so_name, char *err,
                       size_t err_len)
{
    char src_name[128], tmp_name[128], log_name[128];
    char src_dir[PATH_MAX], src[PATH_MAX], tmp[PATH_MAX], log[PATH_MAX];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp.%ld", so_name, (long)getpid());
    snprintf(log_name, sizeof log_name, "torch-bridge-%s.log", key);
    int src_fd = torch_write_source(dirfd, key, src_name, sizeof src_name);
    if (src_fd < 0) {
        snprintf(err, err_len, "cannot write the bridge source into %s: %s", dir, strerror(errno));
        return -1;
    }
    int log_fd = torch_cache_open_for_write(dirfd, log_name, 1);
    if (torch_pathf(src_dir, sizeof src_dir, "%s/%s", dir, src_name) ||
        torch_pathf(src, sizeof src, "%s/torch_bridge.cpp", src_dir) ||
        torch_pathf(tmp, sizeof tmp, "%s/%s", dir, tmp_name) ||
        torch_pathf(log, sizeof log, "%s/%s", dir, log_name) || log_fd < 0) {
        snprintf(err, err_len, "cannot write the bridge build into %s: %s", dir,
                 log_fd < 0 ? strerror(errno) : "path too long");
        if (log_fd >= 0)
            close(log_fd);
        unlinkat(src_fd, "torch_bridge.cpp", 0);
        unlinkat(src_fd, "torch.h", 0);
        close(src_fd);
        unlinkat(dirfd, src_name, AT_REMOVEDIR);
        return -1;
    }
    /* CXX may carry words ("ccache g++"). */
    const char *cxx_env = settings_env("CXX");
    char cxx[256];
    snprintf(cxx, sizeof cxx, "%s", cxx_env && *cxx_env ? cxx_env : "c++");
    char inc_flag[PATH_MAX + 2], api_flag[PATH_MAX + 40], src_flag[PATH_MAX + 2],
        rpath[PATH_MAX + 16];
    snprintf(inc_flag, sizeof inc_flag, "-I%s", inc);
    snprintf(api_flag, sizeof api_flag, "-I%s/torch/csrc/api/include", inc);
    snprintf(src_flag, sizeof src_flag, "-I%s", src_dir);
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", libdir);
    char *argv[32];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(cxx, " ", &save); w && n < 8;
         w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    const char *abi = torch_abi_flag(libs->torch_cpu);
    /* -DNDEBUG as torch's release builds: RecordFunction's layout depends on it. */
    const char *fixed[] = {"-std=c++17", "-O1",          "-DNDEBUG", "-fPIC",  "-shared", "-w",
                           src,          "-o",           tmp,        src_flag, inc_flag,  api_flag,
                           rpath,        libs->torch_cpu};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = (char *)fixed[i];
    if (libs->c10[0])
        argv[n++] = (char *)libs->c10;
    if (abi[0])
        argv[n++] = (char *)abi;
    argv[n] = NULL;
    int rc = torch_run(argv, log_fd);
    close(log_fd);
    struct stat st;
    if (rc == -1)
        snprintf(err, err_len, "cannot run the C++ compiler %s: %s", argv[0], strerror(errno));
    else if ((rc != 0 && rc != -2) || fstatat(dirfd, tmp_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        snprintf(err, err_len, "the C++ compiler %s failed (status %d); see %s", argv[0], rc, log);
    else if (renameat(dirfd, tmp_name, dirfd, so_name) != 0)
        snprintf(err, err_len, "cannot move the bridge into %s: %s", dir, strerror(errno));
    else
        rc = 0;
    if (rc != 0)
        unlinkat(dirfd, tmp_name, 0);
    unlinkat(src_fd, "torch_bridge.cpp", 0);
    unlinkat(src_fd, "torch.h", 0);
    close(src_fd);
    unlinkat(dirfd, src_name, AT_REMOVEDIR);
    return rc == 0 ? 0 : -1;
}

/* The build's interval, its thread and the Python call it happened under (META
 * torch_bridge_build "START END TID NODE", ticks): the profiler's time, which the report
 * takes out of that call and the calls around it. */
static void torch_note_build(uint64_t start)
{
    char v[96];
    snprintf(v, sizeof v, "%llu %llu %ld %u", (unsigned long long)start,
             (unsigned long long)prof_clock_ticks(), (long)syscall(SYS_gettid),
             prof_current_py_node ? prof_current_py_node() : 0);
    collector_add_meta("torch_bridge_build", v);
}

/* Finds or builds the bridge for this libtorch and installs it. Returns 0, or -1 with
 * why in err. */
static int torch_bridge_load(const struct torch_libs *libs, char *err, size_t err_len)
{
    char real_torch[PATH_MAX], libdir[PATH_MAX], inc[PATH_MAX], dir[PATH_MAX];
    struct stat st;
    if (!realpath(libs->torch_cpu, real_torch) || stat(real_torch, &st) != 0) {
        snprintf(err, err_len, "cannot read %s: %s", libs->torch_cpu, strerror(errno));
        return -1;
    }
    snprintf(libdir, sizeof libdir, "%s", real_torch);
    *strrchr(libdir, '/') = '\0';
    if (torch_find_headers(libdir, inc, sizeof inc) != 0) {
        snprintf(err, err_len, "no torch headers (ATen/record_function.h) beside %s", real_torch);
        return -1;
    }
    uint64_t h = torch_fnv(0xcbf29ce484222325ull, real_torch, strlen(real_torch));
    int64_t stamp[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                        (int64_t)st.st_mtim.tv_nsec};
    h = torch_fnv(h, stamp, sizeof stamp);
    h = torch_fnv(h, torch_bridge_cpp_text, strlen(torch_bridge_cpp_text));
    h = torch_fnv(h, torch_h_text, strlen(torch_h_text));
    char key[17], so_name[64], lock_name[64], so_path[PATH_MAX];
    snprintf(key, sizeof key, "%016llx", (unsigned long long)h);
    snprintf(so_name, sizeof so_name, "torch-bridge-%s.so", key);
    snprintf(lock_name, sizeof lock_name, "torch-bridge-%s.lock", key);
    /* Code is loaded from here: a folder of this user's alone (torch_cache.h). */
    int dirfd = torch_cache_open(dir, sizeof dir, err, err_len);
    if (dirfd < 0)
        return -1;
    if (torch_pathf(so_path, sizeof so_path, "%s/%s", dir, so_name)) {
        snprintf(err, err_len, "the bridge cache path %s is too long", dir);
        close(dirfd);
        return -1;
    }
    int have = torch_cache_trusted_file(dirfd, dir, so_name, err, err_len);
    if (have == 0) {
        /* Ranks of one job share the cache: one builds, the others wait for it. */
        int lock = openat(dirfd, lock_name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (lock < 0) {
            snprintf(err, err_len, "cannot write the bridge cache %s: %s", dir, strerror(errno));
            close(dirfd);
            return -1;
        }
        while (flock(lock, LOCK_EX) != 0 && errno == EINTR)
            ;
        have = torch_cache_trusted_file(dirfd, dir, so_name, err, err_len);
        if (have == 0) {
            collector_note("building the libtorch bridge for %s (once; cached in %s; profrun "
                           "--prepare builds it before a run)",
                           real_torch, dir);
            uint64_t t0 = prof_clock_ticks();
            if (torch_build(libs, libdir, inc, dirfd, dir, key, so_name, err, err_len) == 0)
                have = torch_cache_trusted_file(dirfd, dir, so_name, err, err_len);
            else
                have = -1;
            torch_note_build(t0);
        }
        close(lock); /* releases the lock */
    }
    close(dirfd);
    if (have != 1) {
        if (have == 0)
            snprintf(err, err_len, "the bridge %s vanished after its build", so_path);
        return -1;
    }
    void *plugin = torch_real_dlopen(so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!plugin) {
        const char *why = dlerror();
        snprintf(err, err_len, "cannot load %s: %s", so_path, why ? why : "?");
        return -1;
    }
    prof_torch_install_fn install = (prof_torch_install_fn)dlsym(plugin, PROF_TORCH_INSTALL_SYMBOL);
    dlerror();
    if (!install) {
        snprintf(err, err_len, "%s has no %s", so_path, PROF_TORCH_INSTALL_SYMBOL);
        return -1;
    }
    torch_hooks.want_shapes = (uint32_t)torch_shapes;
    char why[256] = "";
    if (install(&torch_hooks, why, sizeof why) != 0) {
        snprintf(err, err_len, "the bridge did not install: %s", why);
        return -1;
    }
    collector_add_meta("torch_lib", real_torch);
    int (*user_scope)(void) = (int (*)(void))dlsym(plugin, "prof_torch_bridge_user_scope");
    torch_ops_installed(user_scope ? user_scope() : -1);
    return 0;
}

/* After the outermost dlopen (or at load): if libtorch is there now, install once. */
static void torch_check_loaded(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&torch_state, &expected, 1))
        return;
    struct torch_libs *libs = calloc(1, sizeof *libs);
    if (!libs) {
        atomic_store(&torch_state, 0);
        return;
    }
    dl_iterate_phdr(torch_find_visit, libs);
    if (!libs->torch_cpu[0]) {
        free(libs);
        atomic_store(&torch_state, 0);
        return;
    }
    char err[PATH_MAX + 256];
    if (torch_bridge_load(libs, err, sizeof err) != 0)
        collector_note("no PyTorch operator spans: %s", err);
    free(libs);
    atomic_store(&torch_state, 2);
}

/* ---- the dlopen wrapper ---- */

static __thread int torch_dlopen_depth PROF_TLS;

static torch_dlopen_fn torch_resolve_dlopen(void)
{
    torch_dlopen_fn real = (torch_dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    torch_real_dlopen = real;
    return real;
}

static int torch_in_search_list(const Dl_serinfo *list, const char *dir)
{
    for (unsigned i = 0; list && i < list->dls_cnt; i++)
        if (strcmp(list->dls_serpath[i].dls_name, dir) == 0)
            return 1;
    return 0;
}

static Dl_serinfo *torch_search_list(void *handle)
{
    Dl_serinfo size;
    if (dlinfo(handle, RTLD_DI_SERINFOSIZE, &size) != 0)
        return NULL;
    Dl_serinfo *list = malloc(size.dls_size);
    if (!list)
        return NULL;
    memcpy(list, &size, sizeof size);
    if (dlinfo(handle, RTLD_DI_SERINFO, list) != 0) {
        free(list);
        return NULL;
    }
    return list;
}

/* Our dlopen call would search as libprof.so does, not as its caller: a directory only
 * the caller's RPATH/RUNPATH names is found here, in the loader's order, and opened by
 * its full path. 0: leave the search to the loader. */
static Dl_serinfo *torch_own_search_list;
static pthread_once_t torch_own_search_once = PTHREAD_ONCE_INIT;

static void torch_own_search_init(void)
{
    Dl_info info;
    void *self_map = NULL;
    if (dladdr1((void *)torch_own_search_init, &info, &self_map, RTLD_DL_LINKMAP) && self_map)
        torch_own_search_list = torch_search_list(self_map);
}

static int torch_caller_path(void *caller_map, const char *file, char *out, size_t len)
{
    pthread_once(&torch_own_search_once, torch_own_search_init);
    const Dl_serinfo *ours = torch_own_search_list;
    Dl_serinfo *theirs = torch_search_list(caller_map);
    int found = 0;
    for (unsigned i = 0; theirs && i < theirs->dls_cnt; i++) {
        const char *dir = theirs->dls_serpath[i].dls_name;
        struct stat st;
        if (torch_pathf(out, len, "%s/%s", dir, file) || stat(out, &st) != 0)
            continue;
        found = !torch_in_search_list(ours, dir);
        break;
    }
    free(theirs);
    dlerror();
    return found;
}

/* dlopen as the caller would have: the loader takes the search path and $ORIGIN from the
 * calling object, which is us now. */
static void *torch_dlopen_as(torch_dlopen_fn real, const char *file, int mode, void *caller)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!file || !dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return real(file, mode);
    Lmid_t ns = LM_ID_BASE;
    if (dlinfo(map, RTLD_DI_LMID, &ns) == 0 && ns != LM_ID_BASE)
        return dlmopen(ns, file, mode);
    char path[PATH_MAX];
    const char *origin = strstr(file, "$ORIGIN");
    if (origin || strstr(file, "${ORIGIN}")) {
        char dir[PATH_MAX];
        if (!map->l_name[0] ? !realpath("/proc/self/exe", dir) : !realpath(map->l_name, dir))
            return real(file, mode);
        *strrchr(dir, '/') = '\0';
        const char *rest = origin ? origin + 7 : strstr(file, "${ORIGIN}") + 9;
        size_t head = (size_t)((origin ? origin : strstr(file, "${ORIGIN}")) - file);
        if (torch_pathf(path, sizeof path, "%.*s%s%s", (int)head, file, dir, rest))
            return real(file, mode);
        return real(path, mode);
    }
    if (strchr(file, '/'))
        return real(file, mode);
    void *h = real(file, mode | RTLD_NOLOAD); /* already loaded: the name matches */
    if (h)
        return h;
    if (torch_caller_path(map, file, path, sizeof path)) {
        h = real(path, mode);
        if (h)
            return h;
    }
    return real(file, mode);
}

PROF_EXPORT void *dlopen(const char *file, int mode)
{
    void *caller = __builtin_return_address(0);
    torch_dlopen_fn real = torch_real_dlopen;
    if (__builtin_expect(!real, 0) && !(real = torch_resolve_dlopen()))
        return NULL;
    if (prof_tls_busy)
        return real(file, mode); /* ours (resolve.c): nothing to emulate, nothing to check */
    torch_dlopen_depth++;
    void *h = torch_dlopen_as(real, file, mode, caller);
    torch_dlopen_depth--;
    /* Only after the outermost one: libtorch's constructors have run, the loader's lock is
     * free (checking inside a nested dlopen crashed). */
    if (h && torch_dlopen_depth == 0 && torch_enabled &&
        atomic_load_explicit(&torch_state, memory_order_relaxed) == 0) {
        int saved = errno;
        prof_tls_busy++;
        torch_check_loaded();
        prof_tls_busy--;
        errno = saved;
    }
    return h;
}

/* The dlopen wrapper passes calls through even when the layer is off. */
static void torch_setup(int enabled)
{
    torch_enabled = enabled;
    torch_shapes = settings_bool(SETTING_PROF_SHAPES);
    if (!torch_real_dlopen)
        torch_resolve_dlopen();
}

/* When libtorch is already there (a C++ program linked with it) the bridge is installed
 * at once, else after the outermost dlopen that brings libtorch_cpu in. */
static void torch_start(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    torch_ops_init();
    torch_memory_init();
    torch_check_loaded(); /* a program linked with libtorch has it already */
}

const struct preload_layer torch_layer = {
    .name = "torch",
    .enable = SETTING_PROF_TORCH,
    .setup = torch_setup,
    .start = torch_start,
    .before_fork = torch_memory_before_fork,
    .after_fork_parent = torch_memory_after_fork_parent,
    .after_fork_child = torch_memory_after_fork_child,
};

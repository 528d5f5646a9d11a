/* Telling a DataLoader worker from inside it, in any run (ranks or none): the process is
 * one when it is about to run torch's worker loop, torch.utils.data._utils.worker.
 * _worker_loop, the target of every worker process torch has started (1.x and 2.x).
 *   fork        an after_in_child function of os.register_at_fork runs in the child
 *               under the GIL, with the forking thread's frames intact: the innermost
 *               multiprocessing Process.start on the stack starts a Process whose
 *               _target is _worker_loop.
 *   spawn,      the child unpickles the Process object it is to run: the audit event
 *   forkserver  pickle.find_class("torch.utils.data._utils.worker", "_worker_loop").
 * Both look at what the child will run, not at where its parent was (a fork made from a
 * Dataset's __getitem__ is no worker), need no Python event of ours (the capture window
 * may have switched them off before the workers are forked) and cost nothing outside a
 * fork or an unpickling. The role is decided after the file's first META records may
 * have been written: job_mark_dataloader_worker writes it again. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "python.h"

static const char pydl_module[] = "torch.utils.data._utils.worker";
static const char pydl_func[] = "_worker_loop";

/* Whether path is, or ends with "/" + tail. */
static int pydl_file_is(const char *path, const char *tail)
{
    size_t n = strlen(path), t = strlen(tail);
    return n >= t && !strcmp(path + n - t, tail) && (n == t || path[n - t - 1] == '/');
}

/* co_name and co_filename of a code object, into name and file ("" when missing). */
static void pydl_code_names(py_object *code, char *name, size_t nlen, char *file, size_t flen)
{
    name[0] = file[0] = '\0';
    py_object *n = code ? py.GetAttrString(code, "co_name") : NULL;
    py_object *f = code ? py.GetAttrString(code, "co_filename") : NULL;
    const char *s = n ? py.AsUTF8(n) : NULL;
    if (s)
        snprintf(name, nlen, "%s", s);
    s = f ? py.AsUTF8(f) : NULL;
    if (s)
        snprintf(file, flen, "%s", s);
    py_xdecref(n);
    py_xdecref(f);
    py.ErrClear();
}

/* Whether fn is torch's _worker_loop (a plain function). */
static int pydl_is_worker_loop(py_object *fn)
{
    py_object *code = fn ? py.GetAttrString(fn, "__code__") : NULL;
    char name[64], file[1024];
    pydl_code_names(code, name, sizeof name, file, sizeof file);
    py_xdecref(code);
    return !strcmp(name, pydl_func) && pydl_file_is(file, "torch/utils/data/_utils/worker.py");
}

/* The _target of the Process that the frame of Process.start starts: its self. */
static int pydl_start_frame_runs_worker_loop(py_object *frame)
{
    py_object *locals = py.GetAttrString(frame, "f_locals");
    py_object *key = locals ? py.UnicodeFromString("self") : NULL;
    py_object *self = key ? py.ObjectGetItem(locals, key) : NULL;
    py_object *target = self ? py.GetAttrString(self, "_target") : NULL;
    int yes = target && pydl_is_worker_loop(target);
    py_xdecref(target);
    py_xdecref(self);
    py_xdecref(key);
    py_xdecref(locals);
    py.ErrClear();
    return yes;
}

/* In a forked child, under the GIL: whether the forking thread was starting a Process
 * that runs _worker_loop. Only the innermost Process.start counts (a worker's own
 * Process, started inside a worker loop, is not one). */
static int pydl_forked_for_worker_loop(void)
{
    py_object *frame = py.EvalGetFrame(); /* borrowed */
    if (!frame)
        return 0;
    py.IncRef(frame);
    int yes = 0;
    for (int depth = 0; depth < 64 && frame && frame != py.NoneStruct; depth++) {
        py_object *code = py.GetAttrString(frame, "f_code");
        char name[64], file[1024];
        pydl_code_names(code, name, sizeof name, file, sizeof file);
        py_xdecref(code);
        if (!strcmp(name, "start") && pydl_file_is(file, "multiprocessing/process.py")) {
            yes = pydl_start_frame_runs_worker_loop(frame);
            break;
        }
        py_object *back = py.GetAttrString(frame, "f_back");
        py.DecRef(frame);
        frame = back;
    }
    py_xdecref(frame);
    py.ErrClear();
    return yes;
}

/* os.register_at_fork(after_in_child=...): called by CPython in the child, after its own
 * reinitialization, under the GIL. */
static py_object *pydl_after_fork_child(py_object *self, py_object *unused)
{
    (void)self;
    (void)unused;
    py_object *et, *ev, *etb;
    py.ErrFetch(&et, &ev, &etb);
    if (pydl_forked_for_worker_loop())
        job_mark_dataloader_worker();
    py.ErrClear();
    py.ErrRestore(et, ev, etb);
    py.IncRef(py.NoneStruct);
    return py.NoneStruct;
}

static struct py_method_def pydl_after_fork_def = {
    "profrun_after_fork_child", (void *)pydl_after_fork_child, 4 /* METH_NOARGS */, NULL};

void python_dataloader_attach(void)
{
    /* posix (os's builtin half) is loaded before any program code: taking it from
     * sys.modules runs no import the program would see. */
    py_object *modules = py.ImportGetModuleDict();                              /* borrowed */
    py_object *posix = modules ? py.DictGetItemString(modules, "posix") : NULL; /* borrowed */
    py_object *reg = posix ? py.GetAttrString(posix, "register_at_fork") : NULL;
    py_object *fn = reg ? py.CFunctionNewEx(&pydl_after_fork_def, NULL, NULL) : NULL;
    py_object *kw = NULL, *args = NULL, *r = NULL;
    if (fn && (kw = py.DictNew()) && py.DictSetItemString(kw, "after_in_child", fn) == 0 &&
        (args = py.TupleNew(0)))
        r = py.Call(reg, args, kw);
    py_xdecref(r);
    py_xdecref(args);
    py_xdecref(kw);
    py_xdecref(fn);
    py_xdecref(reg);
    py.ErrClear();
}

void python_dataloader_audit(const char *event, py_object *args)
{
    if (strcmp(event, "pickle.find_class") != 0 || !args)
        return;
    py_object *m = py.TupleGetItem(args, 0); /* borrowed */
    py_object *n = m ? py.TupleGetItem(args, 1) : NULL;
    const char *ms = n ? py.AsUTF8(m) : NULL;
    const char *ns = ms ? py.AsUTF8(n) : NULL;
    if (ns && !strcmp(ms, pydl_module) && !strcmp(ns, pydl_func))
        job_mark_dataloader_worker();
    py.ErrClear();
}

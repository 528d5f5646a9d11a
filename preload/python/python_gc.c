/* Python's garbage collector: a collection pauses the thread whose allocation set it off,
 * inside whatever call was running, and a full one (generation 2) over a large heap takes
 * tens of milliseconds. Without this the pause reads as that call's own time: a review's
 * slow step was blamed on torch's VFModule.__getattr__, which had only set off a 45 ms
 * collection. A C function in gc.callbacks (called at each collection's start and stop,
 * not through the interpreter's call path, so no profiler event and no call counted)
 * writes one PY_GC record per collection while recording. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "python.h"

static uint64_t gc_start; /* the collection under way's start (collections hold the GIL) */

static py_object *gc_callback(py_object *self, py_object *args)
{
    (void)self;
    uint64_t now = prof_clock_ticks();
    /* The program may be between raising and catching an exception: keep it intact. */
    py_object *et, *ev, *etb;
    py.ErrFetch(&et, &ev, &etb);
    py_object *phase = py.TupleGetItem(args, 0); /* borrowed */
    py_object *info = py.TupleGetItem(args, 1);
    const char *s = phase ? py.AsUTF8(phase) : NULL;
    if (s && !strcmp(s, "start")) {
        gc_start = now;
    } else if (s && !strcmp(s, "stop") && gc_start && info &&
               atomic_load_explicit(&prof_recording, memory_order_relaxed)) {
        py_object *gen = py.DictGetItemString(info, "generation"); /* borrowed */
        py_object *found = py.DictGetItemString(info, "collected");
        long g = gen ? py.AsLong(gen) : -1, n = found ? py.AsLong(found) : 0;
        struct prof_thread *t = emit_thread();
        struct prof_rec_py_gc *rec = t && g >= 0 ? ring_reserve(&t->ring, sizeof *rec) : NULL;
        if (rec) { /* (else counted as lost) */
            rec->h.type = PROF_REC_PY_GC;
            rec->h.size = sizeof *rec;
            rec->generation = (uint16_t)g;
            rec->reserved = 0;
            rec->start = gc_start;
            rec->end = now;
            rec->collected = n > 0 ? (uint64_t)n : 0;
            ring_commit(&t->ring);
        }
        gc_start = 0;
    }
    py.ErrClear();
    py.ErrRestore(et, ev, etb);
    py.IncRef(py.NoneStruct);
    return py.NoneStruct;
}

static struct py_method_def gc_def = {"profrun_gc", (void *)gc_callback, 1 /* METH_VARARGS */,
                                      NULL};

void python_gc_attach(void)
{
    /* gc is built in (nothing runs to import it); taken back out of sys.modules when the
     * program had not imported it, so that its own import runs as in a bare run. Its
     * callbacks list is the interpreter's: a later import finds ours in it. */
    py_object *modules = py.ImportGetModuleDict(); /* borrowed */
    int loaded = modules && py.DictGetItemString(modules, "gc") != NULL;
    py_object *gc = py.ImportModule("gc");
    py_object *callbacks = gc ? py.GetAttrString(gc, "callbacks") : NULL;
    py_object *fn = callbacks ? py.CFunctionNewEx(&gc_def, NULL, NULL) : NULL;
    py_object *r = fn ? py.ObjectCallMethod(callbacks, "append", "O", fn) : NULL;
    py_xdecref(r);
    py_xdecref(fn);
    py_xdecref(callbacks);
    py_xdecref(gc);
    if (!loaded && modules && py.DictDelItemString)
        py.DictDelItemString(modules, "gc");
    py.ErrClear();
}

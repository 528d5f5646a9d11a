/* stacks_python: the sampler reads the sampled thread's Python frames itself, without the
 * Python layer's hook (PROF_PYTHON=0), on CPython 3.8-3.13. See stacks_python.c. */
#ifndef PROF_STACKS_PYTHON_H
#define PROF_STACKS_PYTHON_H

#include <stdint.h>

#include "ring.h"
#include "stacks_window.h"

/* Code objects one thread's sampler has already defined (PY_CODE written): a small
 * fixed table, keyed by the code object's address, its first line and its name's and
 * file's addresses, so that another function at a reused address is not mistaken. */
#define STACKS_PY_CACHE_SLOTS 256u

struct stacks_py_cache {
    struct {
        uint64_t code, name, file;
        uint32_t line, id; /* id 0: free */
    } slots[STACKS_PY_CACHE_SLOTS];
    /* one sample's copies of the pages its reads met: frames, and the other objects
     * (thread state, code objects); emptied at each sample's start */
    struct stacks_window frames, objects;
};

/* 1 once stacks_python_start found a CPython it knows. */
extern int stacks_python_on;

/* At the sampler's start, in normal context: finds the interpreter's symbols and its
 * offsets; says once on stderr why Python frames are not read when it is a Python it does
 * not know. Silent in a process without Python. */
void stacks_python_start(void);

/* In the sampler's signal handler, on the interrupted thread: writes the PY_CODE records
 * of code objects new to this thread and the SAMPLE_PY record (ticks: the SAMPLE's) into
 * r. Nothing when the thread runs no Python. Async-signal-safe: no lock, no allocation;
 * the process's memory is read only through process_vm_readv. */
void stacks_python_sample(struct prof_ring *r, struct stacks_py_cache *c, uint64_t ticks);

#endif

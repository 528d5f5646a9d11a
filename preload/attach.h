/* profrun attach, the library's side (attach.c): loaded by dlopen into a running process
 * that was started without the preload, or asked to open the window of one that was. */
#ifndef PROF_ATTACH_H
#define PROF_ATTACH_H

#include <stddef.h>

/* In the constructor: whether this dlopen comes from profrun attach (the loading thread
 * is named "profrun-attach"); the constructor then leaves the start to prof_attach_start. */
int attach_loading(void);
/* 1 while prof_attach_start runs init_begin: the layers start into a running process. */
int attach_starting(void);

/* The rest of the constructor (init.c): settings, collector, layers. */
void init_begin(int argc, char **argv);

/* The Python layer (python_attach.c): puts its hook in through a pending call, if not in
 * already, and then calls ready in the main thread, under the GIL. 0: scheduled; -1: no
 * supported interpreter here. */
int python_attach_late(void (*ready)(void));

/* attach_got.c, from the constructor of an attach (the loader's lock held): points the
 * GOT entries of every loaded object (libprof.so aside) that hold a function whose calls
 * we wrap (CUDA runtime, cuBLAS, cuDNN, NCCL, MPI) at our wrapper. x86-64 only.
 * attach_got_rebound: how many. */
void attach_got_rebind(void);
unsigned long attach_got_rebound(void);

/* The entry profrun attach calls (by dlsym, from the thread it started in the target):
 * settings is "NAME=VALUE" lines (PROF_* settings, and attach.* keys of its own);
 * returns 0 and "output-dir\trun-id" in msg, or non-zero and one line saying why. */
int prof_attach_start(const char *settings, char *msg, size_t msg_len);

#endif

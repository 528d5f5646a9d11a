/* PyTorch CPU tensor memory (torch_memory.c). */
#ifndef PROF_TORCH_MEMORY_H
#define PROF_TORCH_MEMORY_H

/* Sets up the pointer -> size table; the wrappers record once it exists. */
void torch_memory_init(void);
/* In a forked child: the table's lock may have been held by a thread that is gone. */
void torch_memory_after_fork_child(void);

#endif

/* PyTorch CPU tensor memory (torch_memory.c). */
#ifndef PROF_TORCH_MEMORY_H
#define PROF_TORCH_MEMORY_H

/* Sets up the pointer -> size table; the wrappers record once it exists. */
void torch_memory_init(void);
/* fork: the forking thread takes the block table's lock (a bounded wait), so that the child
 * gets the table whole; the parent gives it back, the child clears it. */
void torch_memory_before_fork(void);
void torch_memory_after_fork_parent(void);
void torch_memory_after_fork_child(void);

#endif

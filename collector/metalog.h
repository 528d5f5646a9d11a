/* Process-wide records (interned strings, kernel symbols, metadata found during the run):
 * kept in memory for the whole process life, because every trace file of the process
 * (a forked child's too) must carry all of them. Appended by any thread under a mutex
 * (rare events); copied out by the drain-lock holder. */
#ifndef PROF_METALOG_H
#define PROF_METALOG_H

#include <stddef.h>
#include <stdint.h>

void metalog_append(uint16_t type, const void *fixed, size_t fixed_len, const char *text1,
                    const char *text2);
uint32_t metalog_intern(const char *text);
/* Hands the bytes after *offset to write(data, len) and advances *offset. try_only: give
 * up (return -1) rather than wait for the mutex (signal handlers). */
int metalog_copy_out(size_t *offset, void (*write)(const void *, size_t), int try_only);
void metalog_atfork_prepare(void);
void metalog_atfork_parent(void);
void metalog_atfork_child(void);

#endif

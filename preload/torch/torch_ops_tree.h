/* The PyTorch op trees' shared parts (private to preload/torch): the per-thread op stack,
 * tree and names that torch_ops.c builds in the bridge's hooks, and that torch_ops_drain.c
 * writes out, frees and resets from the collector's side. */
#ifndef PROF_TORCH_OPS_TREE_H
#define PROF_TORCH_OPS_TREE_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace_format.h"

#define TORCH_MAX_DEPTH 255 /* depth is a u8 in the record */
#define TORCH_NAME_SLOTS 512
#define TORCH_TEXT_SLOTS 1024
#define TORCH_CHUNK_NODES 1024
#define TORCH_MAX_CHUNKS 1024
#define TORCH_SCOPE_CHUNK 1024 /* entries of a chunk of a thread's log of step scopes */
#define TORCH_SCOPE_SLOTS 64   /* how many chunks the collector may fall behind by */

/* Counters of one node: written by the owning thread only, read by the collector, so each
 * is a relaxed atomic; version moves last, after every change. */
struct torch_node {
    uint32_t id;
    uint32_t name_sid, shapes_sid;
    uint8_t scope;
    struct torch_node *parent;
    struct torch_node *last_child; /* the child found last: loops run the same one again */
    /* the sibling run after this node the last time: an op runs the same sequence of ops
     * again (the owner's; a guess, checked by name and shapes) */
    struct torch_node *next_call;
    _Atomic uint64_t calls, raw_calls, total, self;
    _Atomic int64_t mem[2], self_mem[2]; /* [0] CPU, [1] device */
    _Atomic uint64_t version;
    uint64_t written_version; /* the collector's */
};

/* What one ended op adds to its node. */
struct torch_tally {
    uint64_t total, self;
    int64_t mem[2], self_mem[2];
};

struct torch_frame {
    uint64_t start;
    uint64_t handle; /* the RecordFunction's address */
    int64_t sequence_nr;
    uint64_t fwd_thread;
    uint32_t name_sid;
    uint32_t shapes_sid;
    uint8_t scope;
    uint8_t kept;            /* a USER_SCOPE of the steps: logged when it ends */
    struct torch_node *node; /* NULL: beyond the tree's limits, not counted */
    uint64_t child_ticks;    /* time of the direct children that ended */
    int64_t mem[2], self_mem[2];
    uint32_t children;
    /* The first child, while it is the only one and has this op's name: counted only if
     * a second child comes, else folded into this op when it ends. */
    struct torch_node *pending;
    struct torch_tally pending_tally;
};

/* Name text -> string id, by a hash of the text: the names of autograd nodes and
 * record_function scopes are strings made anew for every op (a new pointer each time),
 * which must not cost an interning and a copy per op. */
struct torch_text_slot {
    uint64_t hash;
    char *text; /* owned */
    uint32_t sid;
    int filtered;
    int kept; /* a scope name of the steps (prof_torch_scope_kept) */
};

/* Name pointer -> the name: the fast path for operator names, which are static. The text
 * is compared too: an owned name's memory is reused by later, different names (a short
 * std::string's text lives inside the RecordFunction, on the stack). One cache line: a
 * name that fits is compared against its copy here, not through its text slot and that
 * slot's heap copy (two more lines an op, the most of the op layer's misses). */
#define TORCH_NAME_INLINE 41 /* bytes of text held in the slot, its NUL included */

struct torch_name_slot {
    const char *ptr;
    struct torch_text_slot *text; /* holds the text when it does not fit inline */
    uint32_t sid;
    uint8_t filtered, kept, fits;
    char inline_text[TORCH_NAME_INLINE];
} __attribute__((aligned(64)));

struct torch_thread {
    struct torch_thread *_Atomic next;
    _Atomic int exited;
    uint32_t tid;
    uint32_t depth;
    struct torch_frame stack[TORCH_MAX_DEPTH];
    struct torch_name_slot names[TORCH_NAME_SLOTS];
    struct torch_text_slot texts[TORCH_TEXT_SLOTS];
    struct torch_node *root_last;
    struct torch_node *chunks[TORCH_MAX_CHUNKS];
    _Atomic uint32_t node_count; /* published: nodes [0, node_count) are initialized */
    uint32_t nodes_defined;      /* the collector's: TORCH_NODE records written */
    /* (parent, name, shapes) -> node, open addressing; the owning thread's only. */
    struct torch_node **table;
    uint32_t table_mask, table_used;
    /* The log of the step scopes that ended (see "the steps' scopes" below): entries
     * [0, scope_len) are written, in chunks that reuse TORCH_SCOPE_SLOTS slots; the
     * collector writes them and frees each chunk it has written whole. */
    struct prof_rec_torch_scope *_Atomic scope_chunks[TORCH_SCOPE_SLOTS];
    _Atomic uint64_t scope_len;
    _Atomic int scope_full; /* an entry found no free slot: the log ends there */
    uint64_t scope_written; /* the collector's */
    int scope_full_written; /* the collector's */
};

/* Every thread's tree, newest first (pushed by the threads, unlinked by the collector). */
extern struct torch_thread *_Atomic torch_threads;

/* torch_ops_drain.c: the collector's source; a forked child's reset (self: the forking
 * thread's tree, or NULL); a thread's log of step scopes emptied. */
void torch_ops_drain(int fresh, int last);
void torch_ops_tree_after_fork(struct torch_thread *self);
void torch_scope_free(struct torch_thread *tt);

#endif

/* flame: a flame graph as an SVG with our own small script (click to zoom, Ctrl-F or the
 * Search button to highlight by regular expression, Reset), in the manner of
 * flamegraph.pl's SVGs. Input: folded stacks ("frame;frame;frame weight" lines), from the
 * Python call trees (export_folded_stream) or the CPU samples (stacks_view). */
#ifndef REPORT_FLAME_H
#define REPORT_FLAME_H

#include <stdint.h>
#include <stdio.h>

#include "summary.h"

struct stacks_view_options;

struct flame_node {
    char *name;
    uint64_t value;                   /* the weight of the frame and everything above it */
    size_t first_child, next_sibling; /* SIZE_MAX: none */
};

struct flame {
    struct flame_node *nodes; /* nodes[0]: the root, "all" */
    size_t n, cap;
    size_t depth; /* frames in the deepest path, the root included */
};

void flame_init(struct flame *fl);
void flame_free(struct flame *fl);
/* Adds the folded lines of in; malformed lines are skipped. */
void flame_read_folded(struct flame *fl, FILE *in);
/* The Python call trees of s, each node's CUDA API time beneath it. */
/* The Python call stacks of s->phase (enum export_phase, --phase). */
void flame_build_python(struct flame *fl, const struct summary *s);
/* What they hold, for a section heading (section) or the graph's own title. */
const char *flame_python_title(const struct summary *s, int section);
/* The call paths of stacks_view (the samples, or --stacks NAME). 0, or 1 said on err. */
int flame_build_stacks(struct flame *fl, struct model_process *const *procs, size_t n,
                       const struct stacks_view_options *o, FILE *err);
/* The SVG: a document of its own (standalone, with the XML declaration), or an <svg>
 * element to place inside an HTML page. unit names the weights ("us", "samples"). */
void flame_svg(FILE *out, const struct flame *fl, const char *title, const char *unit,
               int standalone);
/* flame_svg into path, written whole through a temporary or not at all. 0, or -1 with a
 * message in err. */
int flame_svg_write(const char *path, const struct flame *fl, const char *title, const char *unit,
                    char *err, size_t errlen);

#endif

/* Python functions and builtins: key (code object or PyMethodDef) -> func id, named once
 * with a PY_FUNC record the way cProfile names them. Everything here runs under the GIL. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "python.h"

struct py_func_slot {
    const void *key;
    uint32_t id;
};
static struct py_func_slot *py_funcs;
/* The PY_FUNC record of each Python function, by id, to name it again at exit. */
static struct prof_rec_py_func *py_func_records;
static uint32_t py_func_records_cap;
static uint32_t py_funcs_mask, py_funcs_used, py_next_func_id = 1;
py_object *python_descr_self;

static const char *py_str(py_object *o)
{
    const char *s = o ? py.AsUTF8(o) : NULL;
    if (!s)
        py.ErrClear();
    return s ? s : "";
}

static uint32_t py_intern_attr(py_object *o, const char *attr)
{
    py_object *v = py.GetAttrString(o, attr);
    uint32_t id = collector_intern(py_str(v));
    if (v)
        py.DecRef(v);
    else
        py.ErrClear();
    return id;
}

/* The name cProfile gives a builtin (its normalizeUserObj), so keys compare equal. */
static void py_cfunction_name(struct py_cfunction *fn, char *out, size_t len)
{
    struct py_method_def *ml = fn->m_ml;
    py_object *mod = fn->m_module;
    const char *modname = NULL;
    if (!fn->m_self) {
        py_object *modobj_name = NULL;
        if (mod && (py.TypeGetFlags(mod->ob_type) & (1ul << 28))) { /* str */
            modname = py_str(mod);
        } else if (mod && (mod->ob_type == py.ModuleType ||
                           py.TypeIsSubtype(mod->ob_type, py.ModuleType))) {
            modobj_name = py.GetAttrString(mod, "__name__"); /* as PyModule_GetNameObject */
            modname = modobj_name ? py_str(modobj_name) : NULL;
            py.ErrClear();
        }
        if (modname && *modname && strcmp(modname, "builtins") != 0)
            snprintf(out, len, "<%s.%s>", modname, ml->ml_name);
        else
            snprintf(out, len, "<%s>", ml->ml_name);
        if (modobj_name)
            py.DecRef(modobj_name);
        return;
    }
    py_object *name = py.UnicodeFromString(ml->ml_name);
    py_object *found = name && py.TypeLookup ? py.TypeLookup(fn->m_self->ob_type, name) : NULL;
    if (name)
        py.DecRef(name);
    if (found) { /* borrowed */
        py_object *r = py.Repr(found);
        if (r) {
            snprintf(out, len, "%s", py_str(r));
            py.DecRef(r);
            return;
        }
    }
    py.ErrClear();
    if (mod && (py.TypeGetFlags(mod->ob_type) & (1ul << 28)))
        snprintf(out, len, "<built-in method %s.%s>", py_str(mod), ml->ml_name);
    else
        snprintf(out, len, "<built-in method %s>", ml->ml_name);
}

static void py_describe(uint32_t id, const void *key, int kind, py_object *obj)
{
    struct prof_rec_py_func rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = PROF_REC_PY_FUNC;
    rec.h.size = sizeof rec;
    rec.func_id = id;
    rec.kind = (uint16_t)kind;
    /* The program may be between raising and catching an exception: keep it intact. */
    py_object *et, *ev, *etb;
    py.ErrFetch(&et, &ev, &etb);
    if (kind == PROF_PY_FUNC_C && obj->ob_type == py.MethodDescrType) {
        /* 3.12+: a method descriptor called with its self. cProfile binds it to self and
         * names the bound method as it names any (python_cfunction_name): by
         * repr(type(self).<name>), which a Python subclass's override answers. */
        char name[512];
        struct py_cfunction bound = {{1, py.CFunctionType}, (void *)key, python_descr_self, NULL};
        if (python_descr_self)
            py_cfunction_name(&bound, name, sizeof name);
        else
            snprintf(name, sizeof name, "<built-in method %s>",
                     ((const struct py_method_def *)key)->ml_name);
        rec.name_sid = rec.qualname_sid = collector_intern(name);
        rec.file_sid = collector_intern("~");
    } else if (kind == PROF_PY_FUNC_C) {
        char name[512];
        struct py_cfunction *fn = (struct py_cfunction *)obj;
        py_cfunction_name(fn, name, sizeof name);
        rec.name_sid = rec.qualname_sid = collector_intern(name);
        rec.file_sid = collector_intern("~");
        if (fn->m_module && (py.TypeGetFlags(fn->m_module->ob_type) & (1ul << 28)))
            rec.module_sid = collector_intern(py_str(fn->m_module));
    } else {
        if (!obj)
            obj = py.EvalGetFrame(); /* monitoring callbacks run in the new frame */
        py_object *code = (py_object *)key;
        rec.name_sid = py_intern_attr(code, "co_name");
        rec.qualname_sid = py.minor >= 11 ? py_intern_attr(code, "co_qualname") : rec.name_sid;
        py_object *file = py.GetAttrString(code, "co_filename");
        const char *path = py_str(file);
        rec.file_sid = collector_intern(path);
        python_action_classify(id, code, path);
        python_phase_classify(id, code, path);
        python_step_classify(id, code, path);
        if (file)
            py.DecRef(file);
        py_object *line = py.GetAttrString(code, "co_firstlineno");
        rec.line = line ? (uint32_t)py.AsLong(line) : 0;
        if (line)
            py.DecRef(line);
        py_object *globals = !obj                 ? NULL
                             : py.FrameGetGlobals ? py.FrameGetGlobals(obj)
                                                  : py.GetAttrString(obj, "f_globals");
        if (globals) {
            rec.module_sid = collector_intern(py_str(py.DictGetItemString(globals, "__name__")));
            py.DecRef(globals);
        }
        py.IncRef(code); /* keep it alive: its address is this function's identity */
    }
    py.ErrClear();
    py.ErrRestore(et, ev, etb);
    collector_add_process_record(&rec, sizeof rec);
    if (kind == PROF_PY_FUNC_PYTHON && py.minor < 11) {
        if (id >= py_func_records_cap) {
            uint32_t cap = py_func_records_cap ? py_func_records_cap * 2 : 4096;
            while (cap <= id)
                cap *= 2;
            struct prof_rec_py_func *r = realloc(py_func_records, cap * sizeof *r);
            if (!r)
                return;
            memset(r + py_func_records_cap, 0, (cap - py_func_records_cap) * sizeof *r);
            py_func_records = r;
            py_func_records_cap = cap;
        }
        py_func_records[id] = rec;
    }
}

static uint32_t py_func_lookup(const void *key)
{
    if (!py_funcs)
        return 0;
    uint32_t j = (uint32_t)python_hash_ptr(key, NULL) & py_funcs_mask;
    for (; py_funcs[j].key; j = (j + 1) & py_funcs_mask)
        if (py_funcs[j].key == key)
            return py_funcs[j].id;
    return 0;
}

int python_func_known(const void *key)
{
    return py_func_lookup(key) != 0;
}

/* Python < 3.11 has no co_qualname: at exit (atexit, while the interpreter still runs),
 * the function objects alive then name their code objects; a second PY_FUNC record with
 * the qualified name replaces the first. Functions gone by then keep co_name. */
py_object *python_qualnames_at_exit(py_object *self, py_object *unused)
{
    (void)self;
    (void)unused;
    /* Only while ours is the thread's profile function (a program's own cProfile keeps
     * its function, and sees this import as before). */
    int ours = python_profile_is_ours();
    if (ours)
        python_profile_pause();
    py_object *gc = py.ImportModule("gc");
    py_object *objects = gc ? py.ObjectCallMethod(gc, "get_objects", NULL) : NULL;
    intptr_t n = objects ? py.ListSize(objects) : 0;
    for (intptr_t i = 0; i < n; i++) {
        py_object *o = py.ListGetItem(objects, i); /* borrowed */
        if (!o || o->ob_type != py.FunctionType)
            continue;
        py_object *code = py.GetAttrString(o, "__code__");
        uint32_t id = code ? py_func_lookup(code) : 0;
        if (code)
            py.DecRef(code);
        if (!id || id >= py_func_records_cap || !py_func_records[id].func_id)
            continue;
        py_object *q = py.GetAttrString(o, "__qualname__");
        if (q) {
            struct prof_rec_py_func rec = py_func_records[id];
            rec.qualname_sid = collector_intern(py_str(q));
            py.DecRef(q);
            if (rec.qualname_sid != py_func_records[id].qualname_sid)
                collector_add_process_record(&rec, sizeof rec);
            py_func_records[id].func_id = 0; /* named once */
        }
    }
    if (objects)
        py.DecRef(objects);
    if (gc)
        py.DecRef(gc);
    py.ErrClear();
    if (ours)
        python_profile_resume();
    py.IncRef(py.NoneStruct);
    return py.NoneStruct;
}

uint32_t python_func_id(const void *key, int kind, py_object *obj)
{
    if ((py_funcs_used + 1) * 2 > py_funcs_mask + 1) {
        uint32_t cap = py_funcs ? (py_funcs_mask + 1) * 2 : 4096;
        struct py_func_slot *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return 0;
        for (uint32_t i = 0; py_funcs && i <= py_funcs_mask; i++) {
            if (!py_funcs[i].key)
                continue;
            uint32_t j = (uint32_t)python_hash_ptr(py_funcs[i].key, NULL) & (cap - 1);
            while (slots[j].key)
                j = (j + 1) & (cap - 1);
            slots[j] = py_funcs[i];
        }
        free(py_funcs);
        py_funcs = slots;
        py_funcs_mask = cap - 1;
    }
    uint32_t j = (uint32_t)python_hash_ptr(key, NULL) & py_funcs_mask;
    while (py_funcs[j].key) {
        if (py_funcs[j].key == key)
            return py_funcs[j].id;
        j = (j + 1) & py_funcs_mask;
    }
    uint32_t id = py_next_func_id++;
    py_funcs[j] = (struct py_func_slot){key, id};
    py_funcs_used++;
    py_describe(id, key, kind, obj);
    return id;
}

/* The memory timeline as a PyTorch memory snapshot (memtl_svg.h): the
 * allocator events as "device_traces", the state at the end as
 * "segments", repro's per-step figures under "repro_memory_timeline". */
#include "analysis/memtl_svg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/outpath.h"

#define TL_KEY "repro_memory_timeline"
#define TL_VERSION 1

static json_t *frames(const repro_memtl_event *e)
{
    char name[96];
    const char *what = e->cat >= 0 ? repro_memtl_cat_name(e->cat) : "reserved";
    if (e->micro >= 0)
        snprintf(name, sizeof name, "%s (step %ld, micro-batch %d)", what, e->step, e->micro);
    else
        snprintf(name, sizeof name, "%s (step %ld)", what, e->step);
    return json_pack("[{s:s, s:I, s:s}]", "filename", "repro", "line", (json_int_t)e->step,
                     "name", name);
}

static json_t *trace_entry(const repro_memtl_event *e, const char *action)
{
    return json_pack("{s:s, s:I, s:I, s:i, s:o}", "action", action, "addr",
                     (json_int_t)e->addr, "size", (json_int_t)e->bytes, "stream", 0, "frames",
                     frames(e));
}

static int append_events(json_t *trace, const repro_memtl *tl)
{
    for (size_t i = 0; i < tl->nevents; i++) {
        const repro_memtl_event *e = &tl->events[i];
        int is_free = !strcmp(e->action, "free");
        if (json_array_append_new(trace, trace_entry(e, is_free ? "free_requested" : e->action)) ||
            (is_free && json_array_append_new(trace, trace_entry(e, "free_completed"))))
            return -1;
    }
    return 0;
}

/* The end state: one segment of the reserved bytes, its live blocks (the
 * categories resident after the last step) and the cached rest. */
static json_t *segments(const repro_memtl *tl)
{
    json_t *segs = json_array();
    if (!tl->nsteps || tl->steps[tl->nsteps - 1].reserved <= 0)
        return segs;
    const repro_memtl_step *last = &tl->steps[tl->nsteps - 1];
    json_t *blocks = json_array();
    int64_t used = 0;
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++) {
        if (last->at_end[c] <= 0)
            continue;
        used += last->at_end[c];
        json_array_append_new(blocks, json_pack("{s:I, s:I, s:s, s:[{s:s, s:i, s:s}]}", "size",
                                                (json_int_t)last->at_end[c], "requested_size",
                                                (json_int_t)last->at_end[c], "state",
                                                "active_allocated", "frames", "filename",
                                                "repro", "line", 0, "name",
                                                repro_memtl_cat_name(c)));
    }
    if (last->reserved > used)
        json_array_append_new(blocks, json_pack("{s:I, s:s}", "size",
                                                (json_int_t)(last->reserved - used), "state",
                                                "inactive"));
    json_array_append_new(segs, json_pack("{s:i, s:I, s:I, s:I, s:I, s:i, s:s, s:o}", "device", 0,
                                          "address", (json_int_t)0x7f0000000000ll, "total_size",
                                          (json_int_t)last->reserved, "allocated_size",
                                          (json_int_t)used, "active_size", (json_int_t)used,
                                          "stream", 0, "segment_type", "large", "blocks", blocks));
    return segs;
}

static json_t *by_cat(const int64_t *v, unsigned known)
{
    json_t *o = json_object();
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++)
        if ((known >> c) & 1u)
            json_object_set_new(o, repro_memtl_cat_key(c), json_integer(v[c]));
    return o;
}

static json_t *step_json(const repro_memtl_step *s, unsigned known)
{
    json_t *marks = json_array();
    for (int b = 0; b < REPRO_MEMTL_NMARK; b++)
        if ((s->marks >> b) & 1u)
            json_array_append_new(marks, json_string(repro_memtl_mark_key(b)));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "step",
                     (json_int_t)s->step, "peak_allocated", (json_int_t)s->peak_allocated,
                     "allocated", (json_int_t)s->allocated, "reserved", (json_int_t)s->reserved,
                     "peak_reserved", (json_int_t)s->peak_reserved, "measured_allocated",
                     (json_int_t)s->measured_allocated, "measured_reserved",
                     (json_int_t)s->measured_reserved, "measured_device_used",
                     (json_int_t)s->measured_device, "at_peak", by_cat(s->at_peak, known),
                     "at_end", by_cat(s->at_end, known), "marks", marks);
}

json_t *repro_memtl_to_json(const repro_memtl *tl)
{
    json_t *cats = json_array(), *marks = json_array(), *steps = json_array();
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++)
        if ((tl->cats_known >> c) & 1u)
            json_array_append_new(cats, json_string(repro_memtl_cat_key(c)));
    for (int b = 0; b < REPRO_MEMTL_NMARK; b++)
        json_array_append_new(marks, json_string(repro_memtl_mark_key(b)));
    for (size_t i = 0; i < tl->nsteps; i++)
        json_array_append_new(steps, step_json(&tl->steps[i], tl->cats_known));
    json_t *trace = json_array();
    if (append_events(trace, tl)) {
        json_decref(trace);
        json_decref(cats);
        json_decref(marks);
        json_decref(steps);
        repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
        return NULL;
    }
    json_t *own = json_pack("{s:i, s:s, s:s, s:s, s:b, s:s, s:I, s:b, s:o, s:o, s:o}", "version",
                            TL_VERSION, "source", tl->source, "title", tl->title, "measured",
                            tl->measured, "cut", tl->cut, "cut_reason", tl->cut_reason,
                            "planned_steps", (json_int_t)tl->planned_steps, "events_dropped",
                            tl->events_dropped, "categories", cats, "marks", marks, "steps",
                            steps);
    json_t *doc = json_pack("{s:o, s:[o], s:o}", "segments", segments(tl), "device_traces", trace,
                            TL_KEY, own);
    if (!doc)
        repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
    return doc;
}

/* ---- reading back ---- */

static int64_t get_int(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static int cat_of(const char *key)
{
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++)
        if (!strcmp(key, repro_memtl_cat_key(c)))
            return c;
    return -1;
}

static int read_step(repro_memtl *tl, const json_t *js, const char *what, size_t i)
{
    if (!json_is_object(js) || !json_is_integer(json_object_get(js, "step")))
        return repro_error_set(REPRO_EINVAL, "%s: %s.steps[%zu]: not an object with a step",
                               what, TL_KEY, i);
    repro_memtl_step s;
    repro_memtl_step_blank(&s, (long)get_int(js, "step"));
    s.peak_allocated = get_int(js, "peak_allocated");
    s.allocated = get_int(js, "allocated");
    s.reserved = get_int(js, "reserved");
    s.peak_reserved = get_int(js, "peak_reserved");
    s.measured_allocated = get_int(js, "measured_allocated");
    s.measured_reserved = get_int(js, "measured_reserved");
    s.measured_device = get_int(js, "measured_device_used");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(js, "at_peak"), k, v)
        if (cat_of(k) >= 0 && json_is_integer(v))
            s.at_peak[cat_of(k)] = (int64_t)json_integer_value(v);
    json_object_foreach((json_t *)json_object_get(js, "at_end"), k, v)
        if (cat_of(k) >= 0 && json_is_integer(v))
            s.at_end[cat_of(k)] = (int64_t)json_integer_value(v);
    size_t j;
    json_array_foreach(json_object_get(js, "marks"), j, v)
        for (int b = 0; b < REPRO_MEMTL_NMARK; b++)
            if (json_is_string(v) && !strcmp(json_string_value(v), repro_memtl_mark_key(b)))
                s.marks |= 1u << b;
    return repro_memtl_push_step(tl, &s);
}

static void copy_str(char *dst, size_t n, const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(dst, n, "%s", v ? v : "");
}

int repro_memtl_from_json(repro_memtl *tl, const json_t *doc, const char *what)
{
    repro_memtl_init(tl, "repro", "");
    const json_t *own = json_object_get(doc, TL_KEY);
    const json_t *steps = json_object_get(own, "steps");
    if (!json_is_object(own) || !json_is_array(steps))
        return repro_error_set(REPRO_EINVAL, "%s: no \"%s\" object with \"steps\"", what,
                               TL_KEY);
    if (get_int(own, "version") != TL_VERSION)
        return repro_error_set(REPRO_EINVAL, "%s: %s version %lld, this repro reads %d", what,
                               TL_KEY, (long long)get_int(own, "version"), TL_VERSION);
    copy_str(tl->source, sizeof tl->source, own, "source");
    copy_str(tl->title, sizeof tl->title, own, "title");
    copy_str(tl->measured, sizeof tl->measured, own, "measured");
    copy_str(tl->cut_reason, sizeof tl->cut_reason, own, "cut_reason");
    tl->cut = json_is_true(json_object_get(own, "cut"));
    tl->planned_steps = (long)get_int(own, "planned_steps");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(own, "categories"), i, v)
        if (json_is_string(v) && cat_of(json_string_value(v)) >= 0)
            tl->cats_known |= 1u << cat_of(json_string_value(v));
    json_array_foreach(steps, i, v)
        if (read_step(tl, v, what, i)) {
            repro_memtl_release(tl);
            return -1;
        }
    return 0;
}

int repro_memtl_read(repro_memtl *tl, const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    if (!doc) {
        repro_memtl_init(tl, "repro", "");
        return repro_error_set(REPRO_EINVAL, "%s:%d: %s", path, err.line, err.text);
    }
    int rc = repro_memtl_from_json(tl, doc, path);
    json_decref(doc);
    return rc;
}

/* ---- files ---- */

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

int repro_memtl_path_is_json(const char *path)
{
    if (ends_with(path, ".json"))
        return 1;
    if (ends_with(path, ".svg"))
        return 0;
    return repro_error_set(REPRO_EINVAL, "'%s': a memory timeline is .svg or .json", path);
}

int repro_memtl_check_path(const char *path, const char *what)
{
    struct stat st;
    if (repro_memtl_path_is_json(path) < 0)
        return repro_error_set(REPRO_EINVAL, "%s: '%s' ends in neither .svg nor .json", what,
                               path);
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return repro_error_set(REPRO_EINVAL, "%s: '%s' is a directory", what, path);
        if (access(path, W_OK) != 0)
            return repro_error_set(REPRO_EINVAL, "%s: '%s' is not writable: %s", what, path,
                                   strerror(errno));
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s: '%s': no directory '%s'", what, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return repro_error_set(REPRO_EINVAL, "%s: '%s': directory '%s' is not writable: %s", what,
                               path, dir, strerror(errno));
    return 0;
}

int repro_memtl_write(const repro_memtl *tl, const char *path)
{
    int is_json = repro_memtl_path_is_json(path);
    if (is_json < 0)
        return -1;
    char *text = NULL;
    if (is_json) {
        json_t *doc = repro_memtl_to_json(tl);
        text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
        if (doc && !text)
            repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
    } else {
        text = repro_memtl_svg(tl);
    }
    if (!text)
        return -1;
    int rc = repro_outfile_write(path, "memory timeline", text, strlen(text));
    free(text);
    return rc;
}

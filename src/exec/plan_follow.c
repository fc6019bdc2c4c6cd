/* plan_follow.c - a real run that follows a plan: the synor-plan/1 file
 * `synor plan --json` writes gives each task id a device name; here every
 * name must be a device of the run (synor_runtime_device_get: "cpu",
 * "opencl0", ...), so a plan for this machine comes from a fabric whose
 * devices carry those names. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "synor/exec.h"

static int device_by_name(const synor_runtime *rt, const char *name)
{
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info d;
        if (synor_runtime_device_get(rt, i, &d) == 0 && !strcmp(d.name, name))
            return (int)i;
    }
    return -1;
}

static int follow(const synor__jdoc *doc, const synor_workload *w, const synor_runtime *rt,
                  unsigned *hints)
{
    static const char *const top[] = {"format", "workload", "fabric", "strategy", "simulated",
                                      "makespan_s", "weights", "setup_s", "copies", "energy_j",
                                      "money_micro", "currency", "deadline_s", "deadline_met",
                                      "shortfall_s", "tasks", NULL};
    static const char *const per[] = {"id", "device", "start_s", "finish_s", NULL};
    const synor__jval *root = synor__jdoc_root(doc);
    synor__jval *fmt, *tasks;
    int rc;
    if ((rc = synor__json_expect(doc, root, "plan", SYNOR__J_OBJECT)) < 0 ||
        (rc = synor__json_check_keys(doc, root, "plan", top)) < 0 ||
        (rc = synor__json_member(doc, root, "plan", "format", SYNOR__J_STRING, 1, &fmt)) < 0 ||
        (rc = synor__json_member(doc, root, "plan", "tasks", SYNOR__J_ARRAY, 1, &tasks)) < 0)
        return rc;
    if (strcmp(fmt->u.str.s, "synor-plan/1") != 0)
        return synor__json_fail(doc, fmt, SYNOR_ESCHEMA, "format",
                                "'%s' is not synor-plan/1", fmt->u.str.s);
    char names[256] = "";
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info d;
        if (synor_runtime_device_get(rt, i, &d) == 0)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     d.name);
    }
    for (size_t i = 0; i < tasks->u.arr.n; i++) {
        const synor__jval *t = tasks->u.arr.items[i];
        char path[48];
        snprintf(path, sizeof path, "tasks[%zu]", i);
        synor__jval *id, *dev;
        if ((rc = synor__json_expect(doc, t, path, SYNOR__J_OBJECT)) < 0 ||
            (rc = synor__json_check_keys(doc, t, path, per)) < 0 ||
            (rc = synor__json_member(doc, t, path, "id", SYNOR__J_STRING, 1, &id)) < 0 ||
            (rc = synor__json_member(doc, t, path, "device", SYNOR__J_STRING, 1, &dev)) < 0)
            return rc;
        long ti = synor_workload_find_task(w, id->u.str.s);
        if (ti < 0)
            return synor__json_fail(doc, id, SYNOR_EINVAL, path,
                                    "task '%s' is not a task of workload '%s'", id->u.str.s,
                                    synor_workload_name(w));
        int di = device_by_name(rt, dev->u.str.s);
        if (di < 0)
            return synor__json_fail(doc, dev, SYNOR_EINVAL, path,
                                    "device '%s' is not a device of this run (%s); plan with a "
                                    "fabric whose devices have these names",
                                    dev->u.str.s, names);
        hints[ti] = (unsigned)di + 1;
    }
    return 0;
}

int synor_exec_plan_hints(const char *path, const synor_workload *w, const synor_runtime *rt,
                          unsigned *hints)
{
    char *text = NULL;
    size_t len = 0;
    int rc = synor__read_file(path, &text, &len);
    if (rc < 0)
        return rc;
    synor__jdoc *doc = NULL;
    rc = synor__json_parse(text, len, path, &doc);
    size_t n = synor_workload_count(w);
    unsigned *tmp = synor__calloc(n ? n : 1, sizeof *tmp);
    if (rc == 0 && !tmp)
        rc = synor__error(SYNOR_ENOMEM, "%s: out of memory", path);
    if (rc == 0)
        rc = follow(doc, w, rt, tmp);
    if (rc == 0)
        memcpy(hints, tmp, n * sizeof *hints);
    synor__free(tmp);
    synor__jdoc_free(doc);
    synor__free(text);
    return rc;
}

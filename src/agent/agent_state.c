/* agent_state.c - the agent's state directory (--state-dir):
 *
 *   lock                 held (flock) while an agent runs on the directory
 *   devices.json         {"coordinator":URL,"devices":[{"name","id"}]}
 *   pending/H.res        a result not yet acknowledged: its bytes
 *   pending/H.json       {"task","lease","sha256","elapsed_ms","bytes"}
 *
 * H is the first 32 hex digits of the SHA-256 of the task id (task ids are
 * the coordinator's text: never used as file names). Every file is written
 * whole to a temporary name, synced and renamed (synor__write_file_atomic);
 * the bytes go before their description, so a description always has its
 * bytes, and bytes that do not hash to their description's checksum (a
 * torn disk) are dropped, not sent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "common/common.h"
#include "synor/netclient.h"

int synor__agent_state_open(const char *dir, int *lock_fd)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pending/.keep", dir);
    if (access(path, F_OK) != 0) {
        int r = synor__write_file_atomic(path, "", 0); /* creates dir and pending/, 0700 */
        if (r)
            return r;
    }
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return synor__error(SYNOR_EIO, "%s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return synor__error(SYNOR_EBUSY, "--state-dir %s: another agent is using it", dir);
        return synor__error(SYNOR_EIO, "%s: flock: %s", path, strerror(e));
    }
    /* the pid, for `synor agent --reclaim` */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        /* only --reclaim needs it: the agent runs without */
    }
    *lock_fd = fd;
    return 0;
}

int synor__agent_state_save_ids(const char *dir, const char *url, unsigned n,
                                const synor_agent_device *devs, char ids[][64])
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "coordinator");
    synor__jw_str(&w, url);
    synor__jw_key(&w, "devices");
    synor__jw_arr_begin(&w);
    for (unsigned i = 0; i < n; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "name");
        synor__jw_str(&w, devs[i].name);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, ids[i]);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__buf_puts(&b, "\n");
    char *text = synor__buf_take(&b);
    if (!text)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    char path[4096];
    snprintf(path, sizeof path, "%s/devices.json", dir);
    int r = synor__write_file_atomic(path, text, strlen(text));
    synor__free(text);
    return r;
}

int synor__agent_state_load_ids(const char *dir, unsigned n, const synor_agent_device *devs,
                                char ids[][64])
{
    char path[4096], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/devices.json", dir);
    if (access(path, F_OK) != 0)
        return 0;
    int r = synor__read_file(path, &text, &len);
    if (r)
        return r;
    synor__jdoc *d = NULL;
    r = synor__json_parse(text, len, path, &d);
    synor__free(text);
    if (r)
        return r;
    synor__jval *arr = synor__json_get(synor__jdoc_root(d), "devices");
    for (size_t k = 0; arr && arr->type == SYNOR__J_ARRAY && k < arr->u.arr.n; k++) {
        synor__jval *nm = synor__json_get(arr->u.arr.items[k], "name");
        synor__jval *id = synor__json_get(arr->u.arr.items[k], "id");
        if (!nm || !id || nm->type != SYNOR__J_STRING || id->type != SYNOR__J_STRING)
            continue;
        for (unsigned i = 0; i < n; i++)
            if (!strcmp(devs[i].name, nm->u.str.s))
                synor__strlcpy(ids[i], id->u.str.s, 64);
    }
    synor__jdoc_free(d);
    return 0;
}

static void pending_paths(const char *dir, const char *task, char *res, char *meta, size_t n)
{
    char h[65];
    synor_netclient_sha256(task, strlen(task), h);
    h[32] = 0;
    snprintf(res, n, "%s/pending/%s.res", dir, h);
    snprintf(meta, n, "%s/pending/%s.json", dir, h);
}

int synor__agent_state_save_pending(const char *dir, const synor__agent_pending *p)
{
    char res[4096], meta[4096];
    pending_paths(dir, p->task, res, meta, sizeof res);
    int r = synor__write_file_atomic(res, p->data, p->len);
    if (r)
        return r;
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "task");
    synor__jw_str(&w, p->task);
    synor__jw_key(&w, "lease");
    synor__jw_str(&w, p->lease);
    synor__jw_key(&w, "sha256");
    synor__jw_str(&w, p->sha256);
    synor__jw_key(&w, "elapsed_ms");
    synor__jw_uint(&w, p->elapsed_ms);
    synor__jw_key(&w, "bytes");
    synor__jw_uint(&w, p->len);
    synor__jw_obj_end(&w);
    char *text = synor__buf_take(&b);
    if (!text)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    r = synor__write_file_atomic(meta, text, strlen(text));
    synor__free(text);
    return r;
}

int synor__agent_state_drop_pending(const char *dir, const char *task)
{
    char res[4096], meta[4096];
    pending_paths(dir, task, res, meta, sizeof res);
    /* The description first: bytes without one are ignored. */
    if (unlink(meta) != 0 && errno != ENOENT)
        return synor__error(SYNOR_EIO, "%s: %s", meta, strerror(errno));
    if (unlink(res) != 0 && errno != ENOENT)
        return synor__error(SYNOR_EIO, "%s: %s", res, strerror(errno));
    return 0;
}

void synor__agent_pending_free_all(synor__agent_pending *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        synor__free(p[i].data);
    synor__free(p);
}

/* Reads one description and its bytes into *p: 0, or 1 when it is unusable
 * (dropped). */
static int load_one(const char *dir, const char *meta_path, synor__agent_pending *p)
{
    char *text = NULL;
    size_t len = 0;
    memset(p, 0, sizeof(*p));
    if (synor__read_file(meta_path, &text, &len))
        return 1;
    synor__jdoc *d = NULL;
    int bad = synor__json_parse(text, len, meta_path, &d) != 0;
    synor__free(text);
    if (bad)
        return unlink(meta_path), 1;
    synor__jval *root = synor__jdoc_root(d);
    synor__jval *t = synor__json_get(root, "task"), *l = synor__json_get(root, "lease");
    synor__jval *s = synor__json_get(root, "sha256"), *e = synor__json_get(root, "elapsed_ms");
    if (!t || !l || !s || t->type != SYNOR__J_STRING || l->type != SYNOR__J_STRING ||
        s->type != SYNOR__J_STRING || !synor_netclient_is_sha256(s->u.str.s)) {
        synor__jdoc_free(d);
        unlink(meta_path);
        return 1;
    }
    synor__strlcpy(p->task, t->u.str.s, sizeof p->task);
    synor__strlcpy(p->lease, l->u.str.s, sizeof p->lease);
    synor__strlcpy(p->sha256, s->u.str.s, sizeof p->sha256);
    p->elapsed_ms = e && e->type == SYNOR__J_NUMBER && e->u.n.is_int && e->u.n.inum >= 0
                        ? (uint64_t)e->u.n.inum
                        : 0;
    synor__jdoc_free(d);
    char res[4096], meta[4096];
    pending_paths(dir, p->task, res, meta, sizeof res);
    char *bytes = NULL;
    size_t n = 0;
    char got[65] = "";
    if (synor__read_file(res, &bytes, &n) == 0)
        synor_netclient_sha256(bytes, n, got);
    if (strcmp(got, p->sha256)) {
        synor__free(bytes);
        synor__agent_state_drop_pending(dir, p->task);
        return 1;
    }
    p->data = bytes;
    p->len = n;
    return 0;
}

int synor__agent_state_load_pending(const char *dir, synor__agent_pending **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/pending", dir);
    DIR *dh = opendir(path);
    if (!dh)
        return errno == ENOENT ? 0 : synor__error(SYNOR_EIO, "%s: %s", path, strerror(errno));
    synor__agent_pending *list = NULL;
    size_t cnt = 0, cap = 0;
    int r = 0;
    struct dirent *ent;
    while ((ent = readdir(dh))) {
        size_t l = strlen(ent->d_name);
        if (l < 6 || strcmp(ent->d_name + l - 5, ".json") || ent->d_name[0] == '.')
            continue;
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 8;
            synor__agent_pending *g = synor__realloc(list, nc * sizeof(*g));
            if (!g) {
                r = synor__error(SYNOR_ENOMEM, "agent: out of memory");
                break;
            }
            list = g;
            cap = nc;
        }
        char meta[4096];
        snprintf(meta, sizeof meta, "%s/%s", path, ent->d_name);
        if (load_one(dir, meta, &list[cnt]) == 0)
            cnt++;
    }
    closedir(dh);
    if (r) {
        synor__agent_pending_free_all(list, cnt);
        return r;
    }
    *out = list;
    *n = cnt;
    return 0;
}

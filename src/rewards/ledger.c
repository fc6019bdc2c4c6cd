/* ledger.c - the reward ledger: an append-only file of entries (rewards
 * and payouts), each carrying a unique id (the idempotency key) and the
 * contributor's running balance after it.
 *
 * File: DIR/ledger.log = "SYNRWLD1", then records (ledger_codec.c), each
 * written with one write() and fdatasync'ed before the call that wrote it
 * returns: a 0 return is the acknowledgement, so an acknowledged entry is
 * always in the file.
 *
 * Open replays the file. Every record must be intact (CRC-32C), valid on
 * its own, have the next seq and an id not seen before, and carry the
 * running balance that the entries before it give. The first damaged
 * record (incomplete, or a bad CRC) with nothing intact after it is a torn
 * write - a crash while appending, never acknowledged - and is cut (noted;
 * read-only opens leave it and ignore it). Damage followed by an intact
 * record is not a torn write: the writer only appends, so it is corruption
 * and open fails naming the file and the offset, never dropping
 * acknowledged entries.
 *
 * In memory: the entries in order, a hash table from id to entry, the
 * contributors with their balances and a hash table from name to
 * contributor. Tables grow before a write, never after, so that an entry
 * written to the file always gets into memory (and a failure before the
 * write changes nothing). One writer per directory: flock(LOCK_EX). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "common/index.h"
#include "rewards/ledger_internal.h"
#include "rewards/rewards_internal.h"

typedef struct lcontrib {
    char name[64];
    int64_t balance;
} lcontrib;

/* Open addressing: slot = item index + 1, 0 empty; load at most 1/2. */
typedef struct table {
    uint32_t *slot;
    size_t cap;
} table;

struct synor_ledger {
    int fd;
    int read_only;
    int broken; /* a write or sync failed: refuse more until reopened */
    synor_ledger_entry *e;
    size_t n, cap;
    lcontrib *c;
    size_t nc, ccap;
    table ids, names;
    char path[4096];
    char note[512];
};

/* ------------------------------------------------------------ tables */

static const char *entry_id(const synor_ledger *l, uint32_t i)
{
    return l->e[i].id;
}
static const char *contrib_name(const synor_ledger *l, uint32_t i)
{
    return l->c[i].name;
}

static long tfind(const table *t, const synor_ledger *l,
                  const char *(*name)(const synor_ledger *, uint32_t), const char *key)
{
    if (!t->cap)
        return -1;
    for (size_t h = synor__hash_str(key) & (t->cap - 1);; h = (h + 1) & (t->cap - 1)) {
        if (!t->slot[h])
            return -1;
        if (strcmp(name(l, t->slot[h] - 1), key) == 0)
            return (long)t->slot[h] - 1;
    }
}

static void tput(table *t, const synor_ledger *l,
                 const char *(*name)(const synor_ledger *, uint32_t), uint32_t item)
{
    size_t h = synor__hash_str(name(l, item)) & (t->cap - 1);
    while (t->slot[h])
        h = (h + 1) & (t->cap - 1);
    t->slot[h] = item + 1;
}

/* Room for count items at load <= 1/2 (rehashing the n present). */
static int treserve(table *t, const synor_ledger *l,
                    const char *(*name)(const synor_ledger *, uint32_t), size_t count, size_t n)
{
    if (t->cap && count * 2 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 64;
    while (cap < count * 2)
        cap *= 2;
    uint32_t *s = synor__calloc(cap, sizeof *s);
    if (!s)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor__free(t->slot);
    t->slot = s;
    t->cap = cap;
    for (size_t i = 0; i < n; i++)
        tput(t, l, name, (uint32_t)i);
    return 0;
}

/* Room in memory for one more entry and one more contributor. */
static int reserve(synor_ledger *l)
{
    if (l->n + 1 >= UINT32_MAX)
        return synor__error(SYNOR_ERANGE, "%s: the ledger is full", l->path);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        synor_ledger_entry *e = synor__realloc(l->e, cap * sizeof *e);
        if (!e)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        l->e = e;
        l->cap = cap;
    }
    if (l->nc == l->ccap) {
        size_t cap = l->ccap ? l->ccap * 2 : 16;
        lcontrib *c = synor__realloc(l->c, cap * sizeof *c);
        if (!c)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        l->c = c;
        l->ccap = cap;
    }
    int rc = treserve(&l->ids, l, entry_id, l->n + 1, l->n);
    return rc ? rc : treserve(&l->names, l, contrib_name, l->nc + 1, l->nc);
}

/* Adds e (its balance already right) to memory; cannot fail after
 * reserve(). */
static void apply(synor_ledger *l, const synor_ledger_entry *e)
{
    long ci = tfind(&l->names, l, contrib_name, e->contributor);
    if (ci < 0) {
        ci = (long)l->nc++;
        synor__strlcpy(l->c[ci].name, e->contributor, sizeof l->c[ci].name);
        tput(&l->names, l, contrib_name, (uint32_t)ci);
    }
    l->c[ci].balance = e->balance;
    l->e[l->n] = *e;
    tput(&l->ids, l, entry_id, (uint32_t)l->n);
    l->n++;
}

/* The balance of who after amount (signed), or -1 when it would be negative
 * or above the limit. */
static int64_t next_balance(const synor_ledger *l, const char *who, int64_t delta)
{
    long ci = tfind(&l->names, l, contrib_name, who);
    int64_t b = ci < 0 ? 0 : l->c[ci].balance;
    int64_t nb = b + delta; /* both within +-10^15: no overflow */
    return nb < 0 || nb > SYNOR_REWARDS_MAX_AMOUNT ? -1 : nb;
}

/* ------------------------------------------------------------ replay */

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A record that is whole and passes its CRC at pos. */
static int intact_at(const unsigned char *p, size_t len, size_t pos)
{
    if (len - pos < 8)
        return 0;
    uint32_t n = get32(p + pos);
    return n >= SYNOR__LEDGER_MIN_BODY && n <= SYNOR__LEDGER_MAX_BODY && len - pos - 8 >= n &&
           synor__crc32c(0, p + pos + 8, n) == get32(p + pos + 4);
}

static int replay(synor_ledger *l, const unsigned char *p, size_t len, size_t *valid_end)
{
    size_t off = 8;
    while (off < len) {
        if (!intact_at(p, len, off)) {
            for (size_t q = off + 1; q + 8 <= len; q++)
                if (intact_at(p, len, q))
                    return synor__error(SYNOR_EPARSE,
                                        "%s: a damaged record at byte %zu, but an intact record "
                                        "follows at byte %zu: this is corruption, not a write "
                                        "torn by a crash; refusing to drop acknowledged entries",
                                        l->path, off, q);
            snprintf(l->note, sizeof l->note,
                     "%s: %s a torn record at byte %zu (%zu bytes to the end): a write "
                     "interrupted by a crash, never acknowledged; %zu entries replayed",
                     l->path, l->read_only ? "ignored (read-only)" : "cut", off, len - off, l->n);
            break;
        }
        uint32_t n = get32(p + off);
        synor_ledger_entry e;
        const char *why = synor__ledger_decode(p + off + 8, n, &e);
        if (!why && e.seq != l->n + 1)
            why = "a sequence number out of order";
        if (!why && tfind(&l->ids, l, entry_id, e.id) >= 0)
            why = "an id recorded before (counted twice)";
        if (!why) {
            int64_t delta = e.kind == SYNOR_LEDGER_REWARD ? e.amount : -e.amount;
            if (next_balance(l, e.contributor, delta) != e.balance)
                why = "a running balance that is not the previous balance plus its "
                      "amount";
        }
        if (why)
            return synor__error(SYNOR_EPARSE, "%s: record at byte %zu (seq %zu): %s", l->path, off,
                                l->n + 1, why);
        int rc = reserve(l);
        if (rc)
            return rc;
        apply(l, &e);
        off += 8 + n;
    }
    *valid_end = off < len ? off : len;
    return 0;
}

/* -------------------------------------------------------------- open */

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int ok = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    return ok ? 0
              : synor__error(SYNOR_EIO, "%s: cannot sync the directory: %s", dir, strerror(errno));
}

static int fail_open(synor_ledger *l, int rc)
{
    synor_ledger_close(l);
    return rc;
}

int synor_ledger_open(const char *dir, int read_only, synor_ledger **out)
{
    if (!dir || !out)
        return synor__error(SYNOR_EINVAL, "synor_ledger_open: NULL argument");
    synor_ledger *l = synor__calloc(1, sizeof *l);
    if (!l)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    l->fd = -1;
    l->read_only = read_only;
    if ((size_t)snprintf(l->path, sizeof l->path, "%s/ledger.log", dir) >= sizeof l->path)
        return fail_open(l, synor__error(SYNOR_EINVAL, "%s: path too long", dir));
    struct stat st;
    if (read_only) {
        errno = 0;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return fail_open(
                l, synor__error(SYNOR_ENOENT, "%s: no ledger here (%s)", dir,
                                errno == ENOENT || !errno ? "no such directory" : strerror(errno)));
        l->fd = open(l->path, O_RDONLY);
        if (l->fd < 0)
            return fail_open(
                l,
                synor__error(errno == ENOENT ? SYNOR_ENOENT : SYNOR_EIO, "%s: %s", l->path,
                             errno == ENOENT ? "no ledger here (no ledger.log)" : strerror(errno)));
    } else {
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return fail_open(l, synor__error(SYNOR_EIO, "%s: cannot create directory: %s", dir,
                                             strerror(errno)));
        l->fd = open(l->path, O_RDWR | O_CREAT, 0644);
        if (l->fd < 0)
            return fail_open(
                l, synor__error(SYNOR_EIO, "%s: cannot open: %s", l->path, strerror(errno)));
        if (flock(l->fd, LOCK_EX | LOCK_NB) != 0)
            return fail_open(
                l, synor__error(errno == EWOULDBLOCK ? SYNOR_EBUSY : SYNOR_EIO, "%s: %s", l->path,
                                errno == EWOULDBLOCK ? "open for writing by another process"
                                                     : strerror(errno)));
    }
    char *data;
    size_t len;
    int rc = synor__read_file(l->path, &data, &len);
    if (rc)
        return fail_open(l, rc);
    size_t end = 8;
    const unsigned char *p = (const unsigned char *)data;
    if (len < 8 && memcmp(data, SYNOR__LEDGER_MAGIC, len) == 0) {
        /* new, or a crash while its header was written; the directory is
         * synced too, so that a crash cannot lose the file's name after
         * entries in it were acknowledged */
        if (!read_only && (ftruncate(l->fd, 0) != 0 ||
                           pwrite(l->fd, SYNOR__LEDGER_MAGIC, 8, 0) != 8 || fdatasync(l->fd) != 0))
            rc = synor__error(SYNOR_EIO, "%s: cannot write the header: %s", l->path,
                              strerror(errno));
        if (!rc && !read_only)
            rc = sync_dir(dir);
    } else if (len < 8 || memcmp(data, SYNOR__LEDGER_MAGIC, 8) != 0) {
        rc = synor__error(SYNOR_EPARSE, "%s: not a synor reward ledger (bad header)", l->path);
    } else {
        rc = replay(l, p, len, &end);
        if (!rc && !read_only && end < len && ftruncate(l->fd, (off_t)end) != 0)
            rc = synor__error(SYNOR_EIO, "%s: cannot cut the torn record: %s", l->path,
                              strerror(errno));
        if (!rc && !read_only && end < len && fdatasync(l->fd) != 0)
            rc = synor__error(SYNOR_EIO, "%s: fdatasync failed: %s", l->path, strerror(errno));
    }
    synor__free(data);
    if (!rc && !read_only && lseek(l->fd, 0, SEEK_END) < 0)
        rc = synor__error(SYNOR_EIO, "%s: seek failed: %s", l->path, strerror(errno));
    if (rc)
        return fail_open(l, rc);
    *out = l;
    return 0;
}

void synor_ledger_close(synor_ledger *l)
{
    if (!l)
        return;
    if (l->fd >= 0)
        close(l->fd); /* releases the lock */
    synor__free(l->e);
    synor__free(l->c);
    synor__free(l->ids.slot);
    synor__free(l->names.slot);
    synor__free(l);
}

const char *synor_ledger_recovery_note(const synor_ledger *l)
{
    return l ? l->note : "";
}

/* ------------------------------------------------------------- write */

static int write_entry(synor_ledger *l, synor_ledger_entry *e)
{
    unsigned char rec[SYNOR__LEDGER_MAX_RECORD];
    size_t n = synor__ledger_encode(e, rec), done = 0;
    while (done < n) {
        ssize_t w = write(l->fd, rec + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            l->broken = 1; /* maybe a partial record: the next open cuts it */
            return synor__error(SYNOR_EIO, "%s: write failed: %s", l->path,
                                w < 0 ? strerror(errno) : "no progress");
        }
        done += (size_t)w;
    }
    if (fdatasync(l->fd) != 0) {
        l->broken = 1;
        return synor__error(SYNOR_EIO, "%s: fdatasync failed: %s", l->path, strerror(errno));
    }
    apply(l, e);
    return 0;
}

static int writable(const synor_ledger *l)
{
    if (l->read_only)
        return synor__error(SYNOR_ESTATE, "%s: the ledger was opened read-only", l->path);
    if (l->broken)
        return synor__error(SYNOR_ESTATE, "%s: an earlier write failed; reopen the ledger",
                            l->path);
    return 0;
}

static int same_contribution(const synor_ledger_entry *e, const synor_contribution *c)
{
    return e->kind == SYNOR_LEDGER_REWARD && strcmp(e->contributor, c->contributor) == 0 &&
           strcmp(e->device, c->device) == 0 &&
           strcmp(e->period, c->period ? c->period : "") == 0 && e->work_milli == c->work_milli &&
           e->gb_milli == c->gb_milli && e->hours_milli == c->hours_milli &&
           e->uptime_bp == c->uptime_bp && e->reputation == c->reputation;
}

int synor_ledger_record(synor_ledger *l, const synor_rewards_policy *p, const synor_catalog *cat,
                        const synor_contribution *c, synor_ledger_entry *out, int *duplicate)
{
    if (!l || !p || !cat || !c)
        return synor__error(SYNOR_EINVAL, "synor_ledger_record: NULL argument");
    int rc = writable(l);
    if (rc)
        return rc;
    synor_reward r;
    if ((rc = synor_rewards_compute(p, cat, c, &r)))
        return rc;
    long old = tfind(&l->ids, l, entry_id, c->id);
    if (old >= 0) {
        if (!same_contribution(&l->e[old], c))
            return synor__error(SYNOR_EEXIST,
                                "id %s: already in the ledger (seq %llu) with other fields; an id "
                                "is recorded once",
                                c->id, (unsigned long long)l->e[old].seq);
        if (out)
            *out = l->e[old];
        if (duplicate)
            *duplicate = 1;
        return 0;
    }
    int64_t nb = next_balance(l, c->contributor, r.amount);
    if (nb < 0) {
        char lim[48];
        return synor__error(
            SYNOR_ERANGE, "contributor %s: the balance would pass %s USD", c->contributor,
            synor_rewards_format_fixed(SYNOR_REWARDS_MAX_AMOUNT, 6, lim, sizeof lim));
    }
    if ((rc = reserve(l)))
        return rc;
    synor_ledger_entry e;
    memset(&e, 0, sizeof e);
    e.seq = l->n + 1;
    e.kind = SYNOR_LEDGER_REWARD;
    synor__strlcpy(e.id, c->id, sizeof e.id);
    synor__strlcpy(e.contributor, c->contributor, sizeof e.contributor);
    synor__strlcpy(e.device, c->device, sizeof e.device);
    synor__strlcpy(e.period, c->period ? c->period : "", sizeof e.period);
    e.recorded_at = (int64_t)time(NULL);
    e.work_milli = c->work_milli;
    e.gb_milli = c->gb_milli;
    e.hours_milli = c->hours_milli;
    e.uptime_bp = c->uptime_bp;
    e.reputation = c->reputation;
    e.reward = r;
    e.amount = r.amount;
    e.balance = nb;
    if ((rc = write_entry(l, &e)))
        return rc;
    if (out)
        *out = e;
    if (duplicate)
        *duplicate = 0;
    return 0;
}

int synor_ledger_payout(synor_ledger *l, const char *id, const char *contributor, int64_t amount,
                        synor_ledger_entry *out, int *duplicate)
{
    if (!l || !id || !contributor)
        return synor__error(SYNOR_EINVAL, "synor_ledger_payout: NULL argument");
    int rc = writable(l);
    if (rc)
        return rc;
    if (!synor__rewards_valid_name(id, 64, 0) || !synor__rewards_valid_name(contributor, 64, 0))
        return synor__error(SYNOR_EINVAL,
                            "payout: id '%s' or contributor '%s' is not 1..63 printable "
                            "characters without spaces",
                            id, contributor);
    char a[48];
    if (amount <= 0 || amount > SYNOR_REWARDS_MAX_AMOUNT)
        return synor__error(SYNOR_EINVAL,
                            "payout %s: amount %s USD is not above 0 and at most "
                            "10^9 USD",
                            id, synor_rewards_format_fixed(amount, 6, a, sizeof a));
    long old = tfind(&l->ids, l, entry_id, id);
    if (old >= 0) {
        const synor_ledger_entry *o = &l->e[old];
        if (o->kind != SYNOR_LEDGER_PAYOUT || strcmp(o->contributor, contributor) != 0 ||
            o->amount != amount)
            return synor__error(SYNOR_EEXIST,
                                "id %s: already in the ledger (seq %llu) with other fields; an id "
                                "is recorded once",
                                id, (unsigned long long)o->seq);
        if (out)
            *out = *o;
        if (duplicate)
            *duplicate = 1;
        return 0;
    }
    int64_t bal;
    if (synor_ledger_balance(l, contributor, &bal))
        return synor__error(SYNOR_ENOENT, "payout %s: contributor %s has no entry in %s", id,
                            contributor, l->path);
    if (amount > bal) {
        char b[48];
        return synor__error(SYNOR_ERANGE,
                            "payout %s: %s USD is more than %s's balance of %s USD; nothing paid",
                            id, synor_rewards_format_fixed(amount, 6, a, sizeof a), contributor,
                            synor_rewards_format_fixed(bal, 6, b, sizeof b));
    }
    if ((rc = reserve(l)))
        return rc;
    synor_ledger_entry e;
    memset(&e, 0, sizeof e);
    e.seq = l->n + 1;
    e.kind = SYNOR_LEDGER_PAYOUT;
    synor__strlcpy(e.id, id, sizeof e.id);
    synor__strlcpy(e.contributor, contributor, sizeof e.contributor);
    e.recorded_at = (int64_t)time(NULL);
    e.amount = amount;
    e.balance = bal - amount;
    if ((rc = write_entry(l, &e)))
        return rc;
    if (out)
        *out = e;
    if (duplicate)
        *duplicate = 0;
    return 0;
}

/* ------------------------------------------------------------- views */

size_t synor_ledger_count(const synor_ledger *l)
{
    return l ? l->n : 0;
}

const synor_ledger_entry *synor_ledger_at(const synor_ledger *l, size_t i)
{
    return l && i < l->n ? &l->e[i] : NULL;
}

const synor_ledger_entry *synor_ledger_find(const synor_ledger *l, const char *id)
{
    long i = l && id ? tfind(&l->ids, l, entry_id, id) : -1;
    return i < 0 ? NULL : &l->e[i];
}

int synor_ledger_balance(const synor_ledger *l, const char *contributor, int64_t *out)
{
    long i = l && contributor ? tfind(&l->names, l, contrib_name, contributor) : -1;
    if (i < 0)
        return synor__error(SYNOR_ENOENT, "no entry of contributor '%s' in %s",
                            contributor ? contributor : "", l ? l->path : "the ledger");
    if (out)
        *out = l->c[i].balance;
    return 0;
}

size_t synor_ledger_contributor_count(const synor_ledger *l)
{
    return l ? l->nc : 0;
}

const char *synor_ledger_contributor_at(const synor_ledger *l, size_t i, int64_t *balance)
{
    if (!l || i >= l->nc)
        return NULL;
    if (balance)
        *balance = l->c[i].balance;
    return l->c[i].name;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "record/pidmap.h"

#define MAX_DEPTH 64

struct PidEntry {
        pid_t pid;              /* 0 = empty */
        union {
                pid_t parent;   /* in the fork and thread tables */
                uid_t uid;      /* in the uid table */
        };
        Session *session;       /* NULL = belongs to none */
};

void pidmap_init(PidMap *m, const char *proc) {
        *m = (PidMap) { .proc = proc };
}

void pidmap_flush(PidMap *m) {
        if (m->entries)
                memset(m->entries, 0, m->n_buckets * sizeof *m->entries);
        m->n_used = 0;
}

void pidmap_forget_forks(PidMap *m) {
        if (m->forks)
                memset(m->forks, 0, m->n_fork_buckets * sizeof *m->forks);
        m->n_forks = 0;
        if (m->threads)
                memset(m->threads, 0, m->n_thread_buckets * sizeof *m->threads);
        m->n_threads = 0;
}

void pidmap_done(PidMap *m) {
        free(m->entries);
        free(m->forks);
        free(m->threads);
        free(m->uids);
        m->entries = m->forks = m->threads = m->uids = NULL;
        m->n_buckets = m->n_used = m->n_fork_buckets = m->n_forks = m->n_thread_buckets = m->n_threads = 0;
        m->n_uid_buckets = m->n_uids = 0;
        m->track_uids = false;
}

/* Open-addressing tables keyed by pid; both the answer cache and the fork table use these. */
static struct PidEntry *table_slot(struct PidEntry *t, size_t n_buckets, pid_t pid) {
        size_t b = ((size_t) pid * 2654435761u) & (n_buckets - 1);

        while (t[b].pid != 0 && t[b].pid != pid)
                b = (b + 1) & (n_buckets - 1);
        return &t[b];
}

static struct PidEntry *table_find(struct PidEntry *t, size_t n_buckets, pid_t pid) {
        struct PidEntry *e;

        if (n_buckets == 0)
                return NULL;
        e = table_slot(t, n_buckets, pid);
        return e->pid == pid ? e : NULL;
}

/* Insert or overwrite; if growing fails the entry is simply not stored (answers stay correct, slower). */
static void table_put(struct PidEntry **t, size_t *n_buckets, size_t *n_used, struct PidEntry v) {
        struct PidEntry *e;

        if ((*n_used + 1) * 2 > *n_buckets) {
                size_t nb = *n_buckets ? *n_buckets * 2 : 256, ob = *n_buckets;
                struct PidEntry *old = *t, *n = calloc(nb, sizeof *n);
                if (!n)
                        return;
                *t = n;
                *n_buckets = nb;
                *n_used = 0;
                for (size_t i = 0; i < ob; i++)
                        if (old[i].pid != 0) {
                                *table_slot(n, nb, old[i].pid) = old[i];
                                (*n_used)++;
                        }
                free(old);
        }
        e = table_slot(*t, *n_buckets, v.pid);
        if (e->pid == 0)
                (*n_used)++;
        *e = v;
}

static void remember(PidMap *m, pid_t pid, Session *s) {
        table_put(&m->entries, &m->n_buckets, &m->n_used, (struct PidEntry) { .pid = pid, .session = s });
}

static void uid_put(PidMap *m, pid_t tgid, uid_t uid) {
        /* bounded as the threads are: what is forgotten is read from /proc again */
        if (m->n_uids > 65536) {
                memset(m->uids, 0, m->n_uid_buckets * sizeof *m->uids);
                m->n_uids = 0;
        }
        table_put(&m->uids, &m->n_uid_buckets, &m->n_uids, (struct PidEntry) { .pid = tgid, .uid = uid });
}

static uid_t uid_of(PidMap *m, pid_t pid);

void pidmap_note_fork(PidMap *m, pid_t child, pid_t parent) {
        table_put(&m->forks, &m->n_fork_buckets, &m->n_forks, (struct PidEntry) { .pid = child, .parent = parent });
        /* the child has its parent's credentials (the parent is most often still there to ask, and asked
         * once); what an earlier process of this pid had is gone */
        if (m->track_uids)
                uid_put(m, child, uid_of(m, parent));
}

void pidmap_track_uids(PidMap *m, bool on) {
        m->track_uids = on;
        if (!on) {
                m->uids = mfree(m->uids);
                m->n_uid_buckets = m->n_uids = 0;
        }
}

void pidmap_note_uid(PidMap *m, pid_t tgid, uid_t uid) {
        if (m->track_uids && tgid > 0)
                uid_put(m, tgid, uid);
}

/* In the uid table: a process found gone with nothing known of it; asked no more (a new process of its pid
 * comes with a fork, which replaces the entry). */
#define UID_GONE ((uid_t) -2)

/* Noted, else read from /proc and remembered; UID_INVALID when gone. */
static uid_t uid_of(PidMap *m, pid_t pid) {
        struct PidEntry *e = table_find(m->uids, m->n_uid_buckets, pid);
        uid_t uid;

        if (e && e->uid == UID_GONE)
                return UID_INVALID;
        if (e && e->uid != UID_INVALID)
                return e->uid;
        if (proc_get_uid(m->proc, pid, &uid) < 0)
                return UID_INVALID;
        if (m->track_uids)
                uid_put(m, pid, uid);
        return uid;
}

uid_t pidmap_uid(PidMap *m, pid_t tgid) {
        struct PidEntry *f;
        uid_t uid;
        pid_t p;

        if (tgid <= 0)
                return UID_INVALID;
        uid = uid_of(m, tgid);
        if (uid != UID_INVALID)
                return uid;
        /* exited before we looked: its parent's, or the nearest ancestor's we know (a subshell exits with
         * its children), through the forks we saw; a uid change is noted for the process that made it, so
         * the walk does not cross one. Remembered, as a gone process's reads come in bursts. */
        p = tgid;
        for (unsigned depth = 0; uid == UID_INVALID && depth < MAX_DEPTH; depth++) {
                f = table_find(m->forks, m->n_fork_buckets, p);
                if (!f || f->parent <= 0)
                        break;
                p = f->parent;
                uid = uid_of(m, p);
        }
        if (m->track_uids)
                uid_put(m, tgid, uid == UID_INVALID ? UID_GONE : uid);
        return uid;
}

void pidmap_note_thread(PidMap *m, pid_t tid, pid_t tgid) {
        /* bounded: without launches nobody forgets them (the boot session only asks about our own) */
        if (m->n_threads > 65536) {
                memset(m->threads, 0, m->n_thread_buckets * sizeof *m->threads);
                m->n_threads = 0;
        }
        table_put(&m->threads, &m->n_thread_buckets, &m->n_threads, (struct PidEntry) { .pid = tid, .parent = tgid });
}

pid_t pidmap_tgid(PidMap *m, pid_t tid) {
        struct PidEntry *e = table_find(m->threads, m->n_thread_buckets, tid);
        pid_t tgid;

        if (e)
                return e->parent;
        if (proc_get_tgid(m->proc, tid, &tgid) < 0)
                return tid;     /* gone: most likely a process's only thread */
        pidmap_note_thread(m, tid, tgid);
        return tgid;
}

/* PROC/PID/NAME opened for reading, or NULL with errno set. */
static FILE *proc_fopen(const char *proc, pid_t pid, const char *name) {
        char path[128];

        snprintf(path, sizeof path, "%s/%i/%s", proc, (int) pid, name);
        return fopen(path, "re");
}

/* The first line of PROC/PID/NAME that starts with prefix, with its newline: -ENODATA if there is none. */
static int proc_find_line(const char *proc, pid_t pid, const char *name, const char *prefix, char **ret) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t sz = 0;

        f = proc_fopen(proc, pid, name);
        if (!f)
                return -errno;
        while (getline(&line, &sz, f) > 0)
                if (startswith(line, prefix)) {
                        *ret = TAKE_PTR(line);
                        return 0;
                }
        return -ENODATA;
}

int proc_get_tgid(const char *proc, pid_t tid, pid_t *ret) {
        _cleanup_free_ char *line = NULL;
        int r, v;

        r = proc_find_line(proc, tid, "status", "Tgid:", &line);
        if (r < 0)
                return r;
        if (sscanf(line + strlen("Tgid:"), "%i", &v) != 1 || v <= 0)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int proc_get_ppid(const char *proc, pid_t pid, pid_t *ret) {
        char buf[1024];
        _cleanup_fclose_ FILE *f = NULL;
        const char *p;
        size_t n;
        int ppid;

        f = proc_fopen(proc, pid, "stat");
        if (!f)
                return -errno;
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        /* "pid (comm) state ppid ...": comm may contain anything, so parse after the last ')' */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %i", &ppid) != 1)
                return -EBADMSG;
        *ret = ppid;
        return 0;
}

int proc_get_cgroup(const char *proc, pid_t pid, char **ret) {
        _cleanup_free_ char *line = NULL;
        size_t n;
        int r;

        r = proc_find_line(proc, pid, "cgroup", "0::", &line);
        if (r < 0)
                return r;
        n = strlen(line);
        if (line[n - 1] == '\n')
                line[n - 1] = 0;
        *ret = strdup(line + 3);
        return *ret ? 0 : -ENOMEM;
}

int proc_get_uid(const char *proc, pid_t pid, uid_t *ret) {
        _cleanup_free_ char *line = NULL;
        unsigned long v;
        const char *p;
        char *end;
        int r;

        /* "Uid:\treal\teffective\tsaved\tfs" */
        r = proc_find_line(proc, pid, "status", "Uid:", &line);
        if (r < 0)
                return r;
        p = line + strlen("Uid:");
        p += strspn(p, " \t");
        if (*p < '0' || *p > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno != 0 || (*end != '\t' && *end != ' ' && *end != '\n') || v >= (unsigned long) (uid_t) -1)
                return -EBADMSG;
        *ret = (uid_t) v;
        return 0;
}

int cgroup_population(const char *root, const char *cgroup) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[4096];
        int n = 0, c;

        if (snprintf(path, sizeof path, "%s%s/cgroup.procs", root, cgroup) >= (int) sizeof path)
                return -ENAMETOOLONG;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while ((c = fgetc(f)) != EOF)
                if (c == '\n')
                        n++;
        return n;
}

static bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && streq(s + a - b, suffix);
}

const char *cgroup_app_unit(const char *cgroup) {
        const char *last;

        if (!cgroup)
                return NULL;
        last = strrchr(cgroup, '/');
        last = last ? last + 1 : cgroup;
        if (strncmp(last, "app-", 4) == 0 && (endswith(last, ".scope") || endswith(last, ".service")))
                return cgroup;
        return NULL;
}

static Session *by_root(Session *sessions, pid_t pid) {
        for (Session *s = sessions; s; s = s->next)
                if (s->kind == PROFILE_APP && s->root_pid == pid)
                        return s;
        return NULL;
}

static Session *by_cgroup(PidMap *m, Session *sessions, pid_t pid) {
        _cleanup_free_ char *cg = NULL;
        bool any = false;

        for (Session *s = sessions; s; s = s->next)
                if (s->cgroup)
                        any = true;
        if (!any || proc_get_cgroup(m->proc, pid, &cg) < 0)
                return NULL;
        for (Session *s = sessions; s; s = s->next)
                if (s->cgroup && streq(s->cgroup, cg))
                        return s;
        return NULL;
}

Session *pidmap_lookup(PidMap *m, Session *sessions, pid_t pid) {
        pid_t chain[MAX_DEPTH];
        size_t n = 0;
        Session *found = NULL;

        if (!sessions)
                return NULL;

        /* Walk up the parent chain until a cached pid, a session root, or init; then cache the answer for
         * every pid on the way. Parents come from fork notifications when we have them, else from /proc.
         * A process that exited before we looked and whose fork we did not see can't be attributed: its
         * reads are left out rather than guessed. */
        for (pid_t p = pid; p > 1 && n < MAX_DEPTH; ) {
                struct PidEntry *e = table_find(m->entries, m->n_buckets, p), *f;
                pid_t ppid;

                if (e) {
                        found = e->session;
                        break;
                }
                chain[n++] = p;
                found = by_root(sessions, p);
                if (!found)
                        found = by_cgroup(m, sessions, p);
                if (found)
                        break;
                f = table_find(m->forks, m->n_fork_buckets, p);
                if (f)
                        ppid = f->parent;
                else if (proc_get_ppid(m->proc, p, &ppid) < 0)
                        break;
                p = ppid;
        }
        for (size_t i = 0; i < n; i++)
                remember(m, chain[i], found);
        return found;
}

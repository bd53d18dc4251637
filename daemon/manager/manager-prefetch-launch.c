/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A launch's prefetch, started at its exec: the main loop learns of the exec (the exec thread allowed it
 * already, it never waits for this) and queues the profile's prefetch on the prefetch worker, where it
 * runs as `seeklessctl prefetch` does (manager-prefetch.c) while the program starts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/time-util.h"
#include "manager/manager.h"
#include "manager/manager-prefetch.h"
#include "manager/manager-prefetch-launch.h"

#define AGAIN_USEC (60 * USEC_PER_SEC)
#define AGAIN_NONE_USEC (10 * 60 * USEC_PER_SEC)
#define MAX_RUNNING 2
/* a prefetch that waited longer than this behind another comes too late for its launch */
#define START_WITHIN_USEC USEC_PER_SEC

static LaunchPrefetchRecent *recent_find(ManagerLaunchPrefetch *l, const char *name) {
        for (size_t i = 0; i < LAUNCH_PREFETCH_RECENT; i++)
                if (l->recent[i].name && streq(l->recent[i].name, name))
                        return &l->recent[i];
        return NULL;
}

/* name's entry: found, or the oldest one taken over */
static LaunchPrefetchRecent *recent_take(ManagerLaunchPrefetch *l, const char *name) {
        LaunchPrefetchRecent *e = recent_find(l, name), *oldest = &l->recent[0];
        char *copy;

        if (e)
                return e;
        for (size_t i = 0; i < LAUNCH_PREFETCH_RECENT && oldest->name; i++)
                if (!l->recent[i].name || l->recent[i].usec < oldest->usec)
                        oldest = &l->recent[i];
        copy = strdup(name);
        if (!copy)
                return NULL;
        free(oldest->name);
        *oldest = (LaunchPrefetchRecent) { .name = copy };
        return oldest;
}

static void on_done(Manager *m, int r, const PrefetchResult *res, void *userdata) {
        ManagerLaunchPrefetch *l = &m->launch_prefetch;
        uint64_t asked = 0;
        LaunchPrefetchRecent *e = recent_find(l, res->profile);

        if (l->running > 0)
                l->running--;
        if (r == -ENOENT && e)
                e->none = true;
        else if (r < 0 && r != -ECANCELED)
                log_debug_errno(r, "Prefetch of %s at its launch failed: %m", res->profile);
        if (r < 0)
                return;
        for (size_t i = 0; i < res->n_fs; i++)
                asked += res->fs[i].st.bytes_asked;
        if (asked == 0)
                return;
        /* the launch it was for (its session began right after the job was queued) */
        for (Session *s = m->recording.launches; s; s = s->next)
                if (streq(s->profile, res->profile))
                        s->prefetched = true;
}

void manager_launch_prefetch_forget(Manager *m, const char *name) {
        LaunchPrefetchRecent *e = recent_find(&m->launch_prefetch, name);

        if (e && e->none)
                e->usec = 0;
}

bool manager_launch_prefetch(Manager *m, const char *path) {
        ManagerLaunchPrefetch *l = &m->launch_prefetch;
        LaunchPrefetchRecent *e;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char why[256] = "";
        int r;

        /* not where the pages a launch uses are not seen (its recording would miss the prefetched ones) */
        if (!m->config.prefetch || !m->config.prefetch_launches || !manager_pages_bpf_uses(m) || !path[0])
                return false;
        e = recent_find(l, path);
        if (e && now - e->usec < (e->none ? AGAIN_NONE_USEC : AGAIN_USEC))
                return false;
        if (l->running >= MAX_RUNNING) {
                l->skipped++;
                log_debug("Prefetch of %s at its launch skipped: %u prefetches under way", path, l->running);
                return false;
        }
        e = recent_take(l, path);
        if (!e)
                return false;
        e->usec = now;
        e->none = false;
        r = manager_prefetch(m, path, now + START_WITHIN_USEC, NULL, on_done, NULL, why, sizeof why);
        if (r < 0) {
                if (why[0])
                        log_debug("Prefetch of %s at its launch not started: %s", path, why);
                else
                        log_debug_errno(r, "Prefetch of %s at its launch not started: %m", path);
                return false;
        }
        l->running++;
        l->started++;
        return true;
}

static void on_boot_done(Manager *m, int r, const PrefetchResult *res, void *userdata) {
        uint64_t asked = 0;

        if (r == -ENOENT)
                log_info("No boot profile yet: nothing to prefetch");
        else if (r < 0 && r != -ECANCELED)
                log_warning_errno(r, "Prefetch of the boot profile failed: %m");
        for (size_t i = 0; r >= 0 && i < res->n_fs; i++)
                asked += res->fs[i].st.bytes_asked;
        /* the boot session (one a daemon's life) was marked when the job was queued: unmarked if nothing
         * was read for it after all */
        if ((r == -ENOENT || (r >= 0 && asked == 0)) && m->recording.boot && !manager_initramfs_read_ahead(m))
                m->recording.boot->prefetched = false;
}

bool manager_initramfs_read_ahead(Manager *m) {
        return m->initramfs_r >= 0 && m->initramfs.prefetch_bytes > 0;
}

void manager_boot_prefetch(Manager *m) {
        char why[256] = "";
        int r;

        if (!m->config.prefetch || !m->config.prefetch_boot)
                return;
        r = manager_prefetch(m, "boot", 0, &m->launch_prefetch.boot_abandon, on_boot_done, NULL, why, sizeof why);
        if (r < 0 && why[0])
                log_info("Prefetch of the boot profile not started: %s", why);
        else if (r < 0)
                log_warning_errno(r, "Prefetch of the boot profile not started: %m");
        else {
                log_info("Prefetch of the boot profile queued");
                /* from now on what the boot reads may have been read for it: marked before its first
                 * record, whenever the job ends (profile.c) */
                if (m->recording.boot)
                        m->recording.boot->prefetched = true;
        }
}

void manager_launch_prefetch_done(Manager *m) {
        for (size_t i = 0; i < LAUNCH_PREFETCH_RECENT; i++)
                m->launch_prefetch.recent[i].name = mfree(m->launch_prefetch.recent[i].name);
}

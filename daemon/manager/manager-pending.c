/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sessions the database cannot take yet. The database is root's, but a root process (sqlite3 left open in a
 * transaction, a backup tool) can hold its write lock for as long as it likes; a session whose window closed
 * meanwhile is kept in memory, in order, and stored once the lock is free again, never dropped unsaid:
 *   - a session's store waits STORE_BUSY_MSEC for the lock (the main loop is blocked that long at most);
 *   - then it waits here, behind the ones already waiting (sessions are stored in the order they ended), and
 *     all are tried again every RETRY_USEC, each try waiting RETRY_BUSY_MSEC at most;
 *   - at most PENDING_MAX sessions or PENDING_MAX_BYTES of them wait: a session beyond is dropped, with an
 *     error in the log;
 *   - at exit (SIGTERM) the lock is waited for SHUTDOWN_WAIT_MSEC in all; what still waits then is lost,
 *     each session with an error in the log (seeklessd(8), "Database").
 * A profile merge that finds the database locked waits the same way, after its session was stored. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc-util.h"
#include "common/log.h"
#include "manager/manager.h"

#define STORE_BUSY_MSEC 1000
#define RETRY_BUSY_MSEC 250
#define RETRY_USEC (5 * USEC_PER_SEC)
#define SHUTDOWN_WAIT_MSEC 10000
#define PENDING_MAX 64
#define PENDING_MAX_BYTES (64u << 20)

typedef struct PendingSession {
        Session *session;       /* NULL once stored: its profile's merge waits */
        char *profile;
        ProfileKind kind;
        size_t n_files;
        int64_t id;             /* once stored */
        uint64_t end_usec;      /* CLOCK_MONOTONIC: its window closed (its duration ends there) */
        uint64_t since_usec;    /* CLOCK_MONOTONIC: waiting since */
        size_t bytes;
} PendingSession;

static void pending_done(PendingSession *p) {
        session_free(p->session);
        free(p->profile);
        *p = (PendingSession) {};
}

/* Stores p's session if it still waits, then merges its profile. Returns 0 when done with it (stored and
 * merged, or failed otherwise: logged), -EBUSY while the database is locked. */
static int pending_store(Manager *m, PendingSession *p, unsigned busy_msec) {
        int r;

        (void) db_set_busy_timeout(m->db, busy_msec);
        if (p->session) {
                int64_t id = 0;

                r = manager_save_session(m, p->session, p->end_usec, &id);
                if (r == -EBUSY)
                        goto finish;
                /* Free the session (and the resolved file list, freed inside) before merging, so that a
                 * big boot's recording and the merge input are never in memory at the same time. */
                p->session = session_free(p->session);
                (void) malloc_trim(0);
                if (r <= 0) {
                        r = 0;
                        goto finish;
                }
                p->id = id;
        }
        {
                ProfileOptions o = manager_profile_options(m);

                r = profile_merge(m->db, p->profile, p->kind, p->id, &o);
                if (r < 0 && r != -EBUSY)
                        log_warning_errno(r, "Failed to merge profile %s, keeping its previous order: %m",
                                          p->profile);
                if (r != -EBUSY)
                        r = 0;
        }
        /* big sessions leave big freed chunks behind: hand them back to the system */
        (void) malloc_trim(0);
        /* and the database's pages: pruned sessions and the merged profile's old ranges */
        manager_space_check(m);
finish:
        (void) db_set_busy_timeout(m->db, DB_BUSY_TIMEOUT_MSEC);
        return r;
}

/* Tries what waits, oldest first, until the first still locked out. Returns how many are left. */
static size_t pending_try(Manager *m, unsigned busy_msec) {
        size_t done = 0;

        while (done < m->pending.n_sessions) {
                PendingSession *p = &m->pending.sessions[done];
                uint64_t waited = (now_usec(CLOCK_MONOTONIC) - p->since_usec) / USEC_PER_SEC;
                bool stored = !p->session;
                int r;

                r = pending_store(m, p, busy_msec);
                if (!p->session) {      /* stored (or failed otherwise) even if its merge still waits */
                        m->pending.bytes -= MIN(m->pending.bytes, p->bytes);
                        p->bytes = 0;
                }
                if (r == -EBUSY)
                        break;
                if (stored)
                        log_info("The database is free again: merged profile %s", p->profile);
                else
                        log_info("The database is free again: stored the %s session of %s, kept in memory for "
                                 "%" PRIu64 " s", profile_kind_to_string(p->kind), p->profile, waited);
                pending_done(p);
                done++;
        }
        memmove(m->pending.sessions, m->pending.sessions + done,
                (m->pending.n_sessions - done) * sizeof *m->pending.sessions);
        m->pending.n_sessions -= done;
        if (done > 0)
                manager_notify_status(m);
        return m->pending.n_sessions;
}

static int on_retry(sd_event_source *source, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (pending_try(m, RETRY_BUSY_MSEC) > 0)
                return sd_event_source_set_time_relative(source, RETRY_USEC) < 0 ? 0 :
                       sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        return 0;
}

static void pending_arm(Manager *m) {
        int r;

        if (!m->event)
                return;
        if (!m->pending.source) {
                r = sd_event_add_time_relative(m->event, &m->pending.source, CLOCK_MONOTONIC, RETRY_USEC, 0,
                                               on_retry, m);
                if (r < 0)
                        log_warning_errno(r, "Failed to add the timer for sessions waiting for the database, "
                                          "they are stored with the next session or at exit: %m");
                return;
        }
        if (sd_event_source_get_enabled(m->pending.source, NULL) > 0)
                return;
        if (sd_event_source_set_time_relative(m->pending.source, RETRY_USEC) >= 0)
                (void) sd_event_source_set_enabled(m->pending.source, SD_EVENT_ONESHOT);
}

/* Keeps p (taken over) waiting, if there is room. */
static void pending_add(Manager *m, PendingSession *p) {
        if (m->pending.n_sessions >= PENDING_MAX || m->pending.bytes + p->bytes > PENDING_MAX_BYTES ||
            GREEDY_REALLOC(m->pending.sessions, m->pending.allocated, m->pending.n_sessions + 1) < 0) {
                log_error("Dropped the %s session of %s (%zu files): %zu sessions (%zu KiB) wait for the "
                          "locked database already (at most %u, %u MiB)", profile_kind_to_string(p->kind),
                          p->profile, p->n_files, m->pending.n_sessions, m->pending.bytes / 1024, PENDING_MAX,
                          PENDING_MAX_BYTES >> 20);
                pending_done(p);
                return;
        }
        m->pending.bytes += p->bytes;
        m->pending.sessions[m->pending.n_sessions++] = *p;
        *p = (PendingSession) {};
        pending_arm(m);
        manager_notify_status(m);
}

void manager_store_session(Manager *m, Session *s, uint64_t end_usec) {
        PendingSession p = {
                .session = s,
                .profile = strdup(s->profile),
                .kind = s->kind,
                .n_files = s->n_files,
                .end_usec = end_usec,
                .since_usec = now_usec(CLOCK_MONOTONIC),
        };
        bool behind = m->pending.n_sessions > 0;

        if (!p.profile) {
                log_error("Out of memory: dropped the %s session of %s (%zu files)",
                          profile_kind_to_string(s->kind), s->profile, s->n_files);
                pending_done(&p);
                return;
        }
        /* behind the ones waiting: the sessions of a profile are stored in the order they ended */
        if (!behind && pending_store(m, &p, STORE_BUSY_MSEC) != -EBUSY) {
                pending_done(&p);
                return;
        }
        if (p.session) {
                p.bytes = session_memory(p.session);
                if (behind)
                        log_info("The %s session of %s (%zu files) waits for the database behind %zu other%s",
                                 profile_kind_to_string(p.kind), p.profile, p.n_files, m->pending.n_sessions,
                                 m->pending.n_sessions == 1 ? "" : "s");
                else
                        log_warning("The database is locked (another process holds its write lock): the %s "
                                    "session of %s (%zu files) is kept in memory and stored once it is free",
                                    profile_kind_to_string(p.kind), p.profile, p.n_files);
        } else
                log_warning("The database is locked (another process holds its write lock): profile %s is "
                            "merged once it is free", p.profile);
        pending_add(m, &p);
}

unsigned manager_pending_count(Manager *m, const char *profile) {
        unsigned n = 0;

        for (size_t i = 0; i < m->pending.n_sessions; i++)
                if (m->pending.sessions[i].session && streq(m->pending.sessions[i].profile, profile))
                        n++;
        return n;
}

void manager_pending_flush(Manager *m) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + SHUTDOWN_WAIT_MSEC * USEC_PER_MSEC;

        if (m->pending.n_sessions == 0)
                return;
        log_info("Waiting up to %u s for the database to store %zu session%s kept in memory",
                 SHUTDOWN_WAIT_MSEC / 1000, m->pending.n_sessions, m->pending.n_sessions == 1 ? "" : "s");
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (now >= deadline ||
                    pending_try(m, (unsigned) MAX((deadline - now) / USEC_PER_MSEC, (uint64_t) 1)) == 0)
                        break;
        }
        for (size_t i = 0; i < m->pending.n_sessions; i++) {
                const PendingSession *p = &m->pending.sessions[i];

                if (p->session)
                        log_error("Lost the %s session of %s (%zu files): the database stayed locked %u s into "
                                  "the stop", profile_kind_to_string(p->kind), p->profile, p->n_files,
                                  SHUTDOWN_WAIT_MSEC / 1000);
                else
                        log_warning("Profile %s not merged, the database stayed locked: its new session counts "
                                    "from the next merge", p->profile);
        }
        manager_pending_free(m);
}

void manager_pending_free(Manager *m) {
        for (size_t i = 0; i < m->pending.n_sessions; i++)
                pending_done(&m->pending.sessions[i]);
        m->pending.sessions = mfree(m->pending.sessions);
        m->pending.n_sessions = m->pending.allocated = m->pending.bytes = 0;
        m->pending.source = sd_event_source_disable_unref(m->pending.source);
}

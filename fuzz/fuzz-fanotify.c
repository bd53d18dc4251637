/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A buffer as read() from the fanotify group that reports reads (FAN_REPORT_FID, and FAN_REPORT_DFID_NAME
 * where the kernel has it): fanotify_event_metadata records, each followed by info records. The input goes through manager_take_open_events(), the walk the
 * daemon runs on every buffer, into a boot session and two launch sessions: pid 100 is the first launch's
 * process, 101 its child (a fork the daemon was told of), 200 the second's; any other pid belongs to no
 * launch (its /proc entry is missing). Checked after: every file kept has a handle of at most
 * FID_HANDLE_MAX bytes, no session holds more files than the buffer has records, and the counters add up. */
#include <inttypes.h>
#include <sys/fanotify.h>

#include "fuzz-util.h"
#include "manager/manager.h"

static Manager *m;
static char proc_dir[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_log_setup();
        fuzz_path(proc_dir, sizeof proc_dir, "proc");   /* never made: lookups in it fail */
        FUZZ_ASSERT(manager_new(&m) == 0);
        pidmap_init(&m->recording.pidmap, proc_dir);
        return 0;
}

static Session *launch(const char *path, pid_t pid, Session *next) {
        Session *s;

        FUZZ_ASSERT(session_new(PROFILE_APP, path, 0, USEC_PER_SEC, &s) == 0);
        s->root_pid = pid;
        s->next = next;
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ void *buf = NULL;
        size_t records = 0;

        /* the daemon reads into an aligned buffer; libFuzzer's copy has no particular alignment */
        buf = malloc(size + 1);
        FUZZ_ASSERT(buf);
        memcpy(buf, data, size);

        FUZZ_ASSERT(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &m->recording.boot) == 0);
        m->recording.launches = launch("/usr/bin/a", 100, launch("/usr/bin/b", 200, NULL));
        m->recording.launches->next->cgroup = strdup("/user.slice/user-1000.slice/app-b.scope");
        FUZZ_ASSERT(m->recording.launches->next->cgroup);
        pidmap_note_fork(&m->recording.pidmap, 101, 100);
        m->recording.events_received = m->recording.overflows = 0;

        manager_take_open_events(m, buf, size, 1);

        for (size_t off = 0; off + sizeof(struct fanotify_event_metadata) <= size; records++) {
                struct fanotify_event_metadata e;

                memcpy(&e, (const uint8_t *) buf + off, sizeof e);
                if (e.event_len < sizeof e || e.event_len > size - off)
                        break;
                off += e.event_len;
        }
        if (fuzz_verbose())
                fprintf(stderr, "%zu records, %" PRIu64 " events, %" PRIu64 " overflows; files: boot %zu, launches %zu and %zu\n",
                        records, m->recording.events_received, m->recording.overflows,
                        m->recording.boot->n_files, m->recording.launches->n_files,
                        m->recording.launches->next->n_files);
        FUZZ_ASSERT(m->recording.events_received <= records &&
                    m->recording.overflows <= m->recording.events_received);
        FUZZ_ASSERT(m->recording.boot->n_files <= m->recording.events_received);
        FUZZ_ASSERT(m->recording.boot->incomplete == (m->recording.overflows > 0));
        for (Session *s = m->recording.launches; s; s = s->next)
                FUZZ_ASSERT(s->n_files <= m->recording.boot->n_files &&
                            s->incomplete == (m->recording.overflows > 0));
        for (size_t i = 0; i < m->recording.boot->n_files; i++)
                FUZZ_ASSERT(m->recording.boot->files[i].key.handle_len <= FID_HANDLE_MAX);

        m->recording.boot = session_free(m->recording.boot);
        while (m->recording.launches) {
                Session *n = m->recording.launches->next;
                session_free(m->recording.launches);
                m->recording.launches = n;
        }
        pidmap_flush(&m->recording.pidmap);
        pidmap_forget_forks(&m->recording.pidmap);
        return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A profile's prefetch, for `seeklessctl prefetch` (the D-Bus method Prefetch, whose handler is here too)
 * and at a launch (manager-prefetch-launch.c):
 * the guard asked on the loop, the watched filesystems copied (mount point, fsid, device, rotational or
 * not), then on the prefetch worker (its database connection), when the job's turn comes, the guard asked again
 * and for each filesystem: its mount point and block device opened (and closed again after it: a held mount
 * point would keep an unmount busy), the profile's input there, its plan (in disk order on a rotating
 * device, as recorded on another when PrefetchNonRotational=yes) and the run, within PrefetchMaxMiB= and
 * PrefetchBudgetSec= (planning included), stopped by any veto of the guard. The result is logged and handed
 * to the caller on the loop. The daemon's own reads are not recorded (manager-pages.c), so a prefetch never
 * enters a session. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bus-names.h"
#include "common/log.h"
#include "fs/block-device.h"
#include "fs/mounts.h"
#include "manager/manager.h"
#include "manager/manager-bus-message.h"
#include "manager/manager-prefetch.h"
#include "policy/idle.h"
#include "prefetch/prefetch-profile.h"

typedef struct PrefetchFsJob {
        uint64_t fsid;
        dev_t dev;
        bool rotational;
} PrefetchFsJob;

typedef struct PrefetchJob {
        Manager *m;
        char *off_file;
        PrefetchResult res;
        PrefetchFsJob *fs;              /* res.n_fs entries */
        PrefetchGuard guard;
        uint64_t max_bytes, budget_usec;
        uint64_t start_by_usec;         /* CLOCK_MONOTONIC: not started after it (a launch's); 0: none */
        ManagerPrefetchDone done;
        void *userdata;
} PrefetchJob;

static void prefetch_job_free(PrefetchJob *j) {
        if (!j)
                return;
        for (size_t i = 0; i < j->res.n_fs; i++)
                free(j->res.fs[i].mount);
        free(j->res.fs);
        free(j->res.profile);
        free(j->off_file);
        free(j->fs);
        free(j);
}

/* On the worker: one filesystem's part. Returns -ENOENT when there is no such profile, else 0 (what went
 * wrong is in f). */
static int prefetch_fs(Db *db, PrefetchJob *j, size_t i, const atomic_bool *cancel, uint64_t deadline) {
        PrefetchFsResult *f = &j->res.fs[i];
        _cleanup_close_ int mount_fd = -EBADF, bdev_fd = -EBADF;
        PrefetchProfile pp = {};
        PrefetchPlan *plan = NULL;
        uint64_t fsid;
        int r;

        r = prefetch_profile_load(db, j->res.profile, j->fs[i].fsid, &pp);
        if (r == -ENOENT)
                return r;
        if (r < 0) {
                f->r = r;
                return 0;
        }
        if (pp.input.n_data == 0 && pp.input.n_metadata == 0) {
                f->skipped = "nothing of the profile there";
                prefetch_profile_done(&pp);
                return 0;
        }
        mount_fd = open(f->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mount_fd < 0 || fsid_of_fd(mount_fd, &fsid) < 0 || fsid != j->fs[i].fsid) {
                f->skipped = "no longer mounted there";
                prefetch_profile_done(&pp);
                return 0;
        }
        /* without the device, the data only: its metadata is left to the start */
        bdev_fd = block_device_open(j->fs[i].dev);
        if (bdev_fd < 0)
                log_debug_errno(bdev_fd, "Prefetch: cannot open the device of %s, data only: %m", f->mount);
        r = prefetch_plan_build(mount_fd, &pp.input,
                                j->fs[i].rotational ? PREFETCH_ORDER_DISK : PREFETCH_ORDER_RECORDED, cancel,
                                deadline, &plan);
        prefetch_profile_done(&pp);
        if (r < 0) {
                f->r = r;
                return 0;
        }
        r = prefetch_run(plan, &(PrefetchOptions) {
                                .mount_fd = mount_fd,
                                .bdev_fd = bdev_fd,
                                .chunk_bytes = prefetch_chunk_bytes(bdev_fd),
                                .max_bytes = j->max_bytes,
                                .deadline_usec = deadline,
                                .cancel = (atomic_bool *) cancel,
                                .should_stop = prefetch_guard_should_stop,
                                .userdata = &j->guard,
                         }, &f->st);
        prefetch_plan_free(plan);
        if (r < 0)
                f->r = r;
        return 0;
}

/* On the worker. */
static int prefetch_work(Db *db, const atomic_bool *cancel, void *userdata) {
        PrefetchJob *j = userdata;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + j->budget_usec;
        PrefetchVeto v = prefetch_guard_check(&j->guard, NULL, NULL);
        bool any_profile = false, late = j->start_by_usec != 0 && now_usec(CLOCK_MONOTONIC) > j->start_by_usec;

        for (size_t i = 0; i < j->res.n_fs; i++) {
                PrefetchFsResult *f = &j->res.fs[i];
                int r;

                if (atomic_load(cancel))
                        return -ECANCELED;
                if (f->skipped)
                        continue;
                if (v != PREFETCH_VETO_NONE) {
                        /* switched off, or short of memory, while the job waited for its turn */
                        f->skipped = prefetch_veto_to_string(v);
                        continue;
                }
                if (late) {
                        /* it waited behind another: its launch has read what it needed by now */
                        f->skipped = "started too late for its launch";
                        continue;
                }
                r = prefetch_fs(db, j, i, cancel, deadline);
                if (r < 0)
                        return r;
                any_profile = true;
        }
        if (!any_profile) {
                /* every filesystem skipped: whether the profile exists is still the answer's */
                PrefetchProfile pp = {};
                int r = prefetch_profile_load(db, j->res.profile, 0, &pp);

                prefetch_profile_done(&pp);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* On the loop. */
static void prefetch_done(int r, void *userdata) {
        PrefetchJob *j = userdata;

        if (r >= 0)
                for (size_t i = 0; i < j->res.n_fs; i++) {
                        const PrefetchFsResult *f = &j->res.fs[i];

                        if (f->skipped)
                                log_debug("Prefetch of %s on %s: skipped: %s", j->res.profile, f->mount, f->skipped);
                        else if (f->r < 0)
                                log_warning_errno(f->r, "Prefetch of %s on %s failed: %m", j->res.profile, f->mount);
                        else
                                log_info("Prefetch of %s on %s: %" PRIu64 " KiB asked (%" PRIu64 " KiB of metadata) "
                                         "in %" PRIu64 " calls, %" PRIu64 " KiB cached already, %u stale file%s, %s",
                                         j->res.profile, f->mount, f->st.bytes_asked / 1024,
                                         f->st.metadata_asked / 1024, f->st.calls, f->st.bytes_cached / 1024,
                                         f->st.files_stale, f->st.files_stale == 1 ? "" : "s",
                                         prefetch_end_to_string(f->st.end));
                }
        if (j->done)
                j->done(j->m, r, &j->res, j->userdata);
        prefetch_job_free(j);
}

/* Whether the filesystem on dev gets no prefetch for being non-rotational (PrefetchNonRotational=no);
 * *ret_rotational: what its device says (true when it cannot be read). */
static bool off_non_rotational(Manager *m, dev_t dev, bool *ret_rotational) {
        bool rot = true;

        (void) block_device_rotational("/sys", dev, &rot);
        *ret_rotational = rot;
        return !rot && !m->config.prefetch_non_rotational;
}

const char *manager_prefetch_refusal(Manager *m, const Filesystem *fs, char *buf, size_t n) {
        _cleanup_free_ char *off = NULL;
        bool rot;

        if (!m->config.prefetch)
                snprintf(buf, n, "Prefetch=no");
        else if (asprintf(&off, "%s/%s", m->run_dir, PREFETCH_OFF_FILE) >= 0 && access(off, F_OK) == 0)
                snprintf(buf, n, "off for this boot (%s)", off);
        else if (off_non_rotational(m, fs->dev, &rot))
                snprintf(buf, n, "%s", PREFETCH_OFF_NON_ROTATIONAL);
        else
                return NULL;
        return buf;
}

int manager_prefetch(Manager *m, const char *profile, uint64_t start_by_usec, const atomic_bool *abandon,
                     ManagerPrefetchDone done, void *userdata, char *why, size_t why_size) {
        PrefetchJob *j;
        PrefetchVeto v;
        uint64_t avail;
        double pressure;
        size_t n = m->filesystems.n;
        int r;

        if (!m->config.prefetch) {
                snprintf(why, why_size, "Prefetch=no");
                return -EOPNOTSUPP;
        }
        j = calloc(1, sizeof *j);
        if (!j)
                return -ENOMEM;
        j->m = m;
        if (asprintf(&j->off_file, "%s/%s", m->run_dir, PREFETCH_OFF_FILE) < 0) {
                j->off_file = NULL;
                prefetch_job_free(j);
                return -ENOMEM;
        }
        j->guard = (PrefetchGuard) {
                .abandon = abandon,
                .off_file = j->off_file,
                .min_available_bytes = (uint64_t) m->config.prefetch_min_available_mib << 20,
                .max_pressure = m->config.prefetch_max_memory_pressure,
        };
        v = prefetch_guard_check(&j->guard, &avail, &pressure);
        if (v != PREFETCH_VETO_NONE) {
                if (v == PREFETCH_VETO_LOW_MEMORY)
                        snprintf(why, why_size, "low memory: %" PRIu64 " MiB available, PrefetchMinAvailableMiB=%u",
                                 avail >> 20, m->config.prefetch_min_available_mib);
                else if (v == PREFETCH_VETO_PRESSURE)
                        snprintf(why, why_size, "memory pressure %.1f%% > PrefetchMaxMemoryPressure=%.1f%%",
                                 pressure, m->config.prefetch_max_memory_pressure);
                else
                        snprintf(why, why_size, "off for this boot (%s)", j->off_file);
                prefetch_job_free(j);
                return -EAGAIN;
        }
        j->max_bytes = (uint64_t) m->config.prefetch_max_mib << 20;
        j->budget_usec = m->config.prefetch_budget_usec;
        j->start_by_usec = start_by_usec;
        j->done = done;
        j->userdata = userdata;
        j->res.profile = strdup(profile);
        j->res.fs = calloc(MAX(n, (size_t) 1), sizeof *j->res.fs);
        j->fs = calloc(MAX(n, (size_t) 1), sizeof *j->fs);
        if (!j->res.profile || !j->res.fs || !j->fs) {
                prefetch_job_free(j);
                return -ENOMEM;
        }
        j->res.n_fs = n;
        for (size_t i = 0; i < n; i++) {
                const Filesystem *fs = &m->filesystems.items[i];
                PrefetchFsResult *f = &j->res.fs[i];
                bool rot = true;

                f->mount = strdup(fs->mount);
                if (!f->mount) {
                        prefetch_job_free(j);
                        return -ENOMEM;
                }
                j->fs[i] = (PrefetchFsJob) { .fsid = fs->fsid, .dev = fs->dev };
                if (off_non_rotational(m, fs->dev, &rot))
                        f->skipped = PREFETCH_OFF_NON_ROTATIONAL;
                j->fs[i].rotational = rot;
        }
        r = plan_worker_submit(m->prefetch_worker, prefetch_work, prefetch_done, j, false);
        if (r < 0) {
                prefetch_job_free(j);
                return r;
        }
        return 0;
}

/* Prefetch NAME: on the prefetch worker; the reply from on_prefetch_done(), one row per watched filesystem. */
static void on_prefetch_done(Manager *m, int r, const PrefetchResult *res, void *userdata) {
        _cleanup_(bus_call_freep) BusCall *c = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (r == -ENOENT)
                r = sd_bus_error_setf(&error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", c->shown);
        else if (r < 0 && r != -ECANCELED)
                r = bus_reply_db_error(&error, r, "read profile");
        if (r >= 0)
                r = sd_bus_message_new_method_return(c->message, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssttttu)");
        for (size_t i = 0; r >= 0 && i < res->n_fs; i++) {
                const PrefetchFsResult *f = &res->fs[i];
                char state[256];

                if (f->r < 0)
                        snprintf(state, sizeof state, "failed: %s", strerror(-f->r));
                else if (f->skipped)
                        snprintf(state, sizeof state, "skipped: %s", f->skipped);
                else
                        snprintf(state, sizeof state, "%s", prefetch_end_to_string(f->st.end));
                r = sd_bus_message_open_container(reply, 'r', "ssttttu");
                if (r >= 0)
                        r = bus_append_path(reply, f->mount);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "sttttu", state, f->st.bytes_asked, f->st.metadata_asked,
                                                  f->st.bytes_cached, f->st.calls, f->st.files_stale);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                bus_call_reply_error(c, r, &error);
}

int manager_method_prefetch(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(bus_call_freep) BusCall *c = NULL;
        Manager *m = userdata;
        const char *shown;
        char why[256];
        int r;

        r = bus_call_new(m, message, &c);
        if (r < 0)
                return r;
        r = bus_read_profile_name(message, "prefetch profiles", &shown, &c->name, error);
        if (r != 0)
                return r;
        c->shown = strdup(shown);
        if (!c->shown)
                return -ENOMEM;
        r = manager_prefetch(m, c->name, 0, NULL, on_prefetch_done, c, why, sizeof why);
        if (r == -EOPNOTSUPP || r == -EAGAIN)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_PREFETCH_OFF, "Prefetch is off: %s.", why);
        if (r < 0)
                return r;
        TAKE_PTR(c);
        return 1;
}

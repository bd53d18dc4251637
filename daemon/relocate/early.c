/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "relocate/early.h"
#include "relocate/exec-gate.h"
#include "relocate/early-stop.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "relocate/item-files.h"
#include "common/log.h"
#include "fs/mounts.h"
#include "relocate/mover.h"
#include "relocate/run.h"

typedef struct Progress {
        Db *db;
        int64_t run_id;
        const DbRunFile *files;
        const size_t *index;            /* the mover's item i is files[index[i]] */
        const size_t *file_of;          /* files[i]'s file (its hot ranges are entries of their own) */
        bool *file_moved;
        uint64_t moved;                 /* files of which an entry was moved */
        EarlyStop *stop;                /* why a cancel came: the budget, or a signal */
        uint64_t keep_fsid;             /* EarlyPassOptions.keep_running_fsid */
} Progress;

static void record(Progress *p, size_t index, const MoveOutcome *outcome) {
        MoveOutcome o = *outcome;
        int r;

        /* A program that already runs this early (PID 1, journald, udevd) runs for as long as the system is
         * up: no pass of ours can move it. Recorded as skipped, so the next boots' passes don't queue it
         * again; the next live run that meets it running queues it once more (one failed open). Unless
         * the initramfs stage runs at boot: it stays queued for the next boot's, which moves it before it
         * runs. */
        if (o.result == MOVE_RETRY && o.why == MOVE_REASON_RUNNING && p->keep_fsid != 0 &&
            p->files[index].file.key.fsid == p->keep_fsid)
                snprintf(o.reason, sizeof o.reason,
                         "running since before the early pass (queued for the initramfs stage at the next boot)");
        else if (o.result == MOVE_RETRY && o.why == MOVE_REASON_RUNNING) {
                o.result = MOVE_SKIPPED;
                o.why = MOVE_REASON_RUNNING_EARLY;
                snprintf(o.reason, sizeof o.reason,
                         "running since before the early pass (cannot be moved while the system is up)");
        }
        /* Not reached before EarlyBudgetSec= ran out or a signal stopped the pass: it stays in the queue
         * (this run is now its newest entry, and the queue is the files whose newest entry is a retry for
         * MOVE_REASON_RUNNING). */
        if (o.result == MOVE_RETRY && o.why == MOVE_REASON_CANCELLED) {
                int sig = early_stop_signal(p->stop);

                o.why = MOVE_REASON_RUNNING;
                if (sig > 0)
                        snprintf(o.reason, sizeof o.reason, "not reached: the pass was stopped by SIG%s (waits for the next boot)",
                                 sigabbrev_np(sig));
                else
                        snprintf(o.reason, sizeof o.reason, "not reached within EarlyBudgetSec= (waits for the next boot)");
        }
        /* same thread as the mover: the checkpoint is written before the next file is touched */
        r = run_checkpoint(p->db, p->run_id, index, &o);
        if (r < 0)
                log_warning_errno(r, "Failed to checkpoint %s: %m", p->files[index].file.path);
        if (o.result == MOVE_DONE && !p->file_moved[p->file_of[index]]) {
                p->file_moved[p->file_of[index]] = true;
                p->moved++;
        }
        log_info("early pass: %s: %s%s%s", p->files[index].file.path,
                 o.result == MOVE_DONE ? "moved" : "not moved", o.reason[0] ? ": " : "", o.reason);
}

/* How many files entries index[0..k) are of (a file's hot ranges are entries of their own). */
static size_t files_in(const size_t *file_of, const size_t *index, size_t k, size_t n_files) {
        _cleanup_free_ bool *seen = calloc(MAX(n_files, (size_t) 1), sizeof *seen);
        size_t c = 0;

        for (size_t i = 0; seen && i < k; i++)
                if (!seen[file_of[index[i]]]) {
                        seen[file_of[index[i]]] = true;
                        c++;
                }
        return seen ? c : k;
}

static void on_file(void *userdata, size_t i, const MoveOutcome *o) {
        Progress *p = userdata;

        record(p, p->index[i], o);
}

/* Is the file the executable of a process that runs now? Asked the way the mover meets it: opening it for
 * writing fails with ETXTBSY. (Not from /proc/PID/exe: reading that link for PID 1 or journald needs
 * CAP_SYS_PTRACE, which seekless-early.service does not have; see doc/kernel.md §4.) A file that opens is
 * closed unchanged; the mover opens it the same way moments later. */
static bool running_now(int mount_fd, const DbFile *f) {
        _cleanup_close_ int fd = file_key_open(mount_fd, &f->key, O_RDWR | O_NONBLOCK | O_NOCTTY);

        return fd == -ETXTBSY;
}

/* Where the boot's relocated files lie on this filesystem: the median of the first blocks of the boot
 * profile's first HOT_SET_SAMPLE files that lie on it and are not this pass's (those are still where they
 * were), or 0. The median, because a file the live run left in place (too new, too big, ...) may lie
 * anywhere. The pass puts its donor in the free space from there on first: a program that was running
 * during the live run belongs with the boot's other files, not wherever the lowest free range happens to
 * be, which after the live run can lie far below or far above them. */
#define HOT_SET_SAMPLE 9
static uint64_t hot_set_start(Db *db, int mount_fd, uint64_t fsid, const DbRunFile *files, size_t n) {
        uint64_t at[HOT_SET_SAMPLE];
        DbProfileFile *pf = NULL;
        ProfileKind kind;
        size_t np = 0, k = 0;

        if (db_get_profile(db, "boot", &kind, &pf, &np) < 0)
                return 0;
        for (size_t i = 0; i < np && k < HOT_SET_SAMPLE; i++) {
                _cleanup_close_ int fd = -EBADF;
                Extent *e = NULL;
                size_t ne = 0;
                bool mine = false;

                if (pf[i].file.key.fsid != fsid)
                        continue;
                for (size_t j = 0; j < n && !mine; j++)
                        mine = files[j].file.id == pf[i].file.id;
                if (mine)
                        continue;
                fd = file_key_open(mount_fd, &pf[i].file.key, O_RDONLY);
                if (fd >= 0 && fiemap_get(fd, &e, &ne) >= 0 && ne > 0)
                        at[k++] = e[0].physical;
                free(e);
        }
        db_profile_files_free(pf, np);
        if (k == 0)
                return 0;
        qsort_safe(at, k, sizeof at[0], cmp_uint64);
        return at[k / 2];
}

static int pass_on(Db *db, const Filesystem *fs, const EarlyPassOptions *opts, const DbRunFile *files, size_t n,
                   const char *state_file, atomic_bool *cancel, EarlyStop *stop, const MoverExecGate *gate,
                   uint64_t *ret_moved, bool *ret_stopped) {
        _cleanup_free_ MoveItem *all = calloc(n + 1, sizeof *all), *items = calloc(n + 1, sizeof *items);
        _cleanup_free_ MoveOutcome *outcomes = calloc(n + 1, sizeof *outcomes);
        _cleanup_free_ size_t *index = calloc(n + 1, sizeof *index);
        _cleanup_free_ char *sysfs = ext4_sysfs_dir(fs->dev);
        _cleanup_close_ int mfd = -EBADF;
        _cleanup_free_ size_t *file_of = NULL;
        _cleanup_free_ bool *file_moved = NULL;
        size_t n_files = 0;
        MoverStats stats = {};
        char where[64];
        Progress p = { .db = db, .files = files, .index = index, .stop = stop, .keep_fsid = opts->keep_running_fsid };
        uint64_t bytes = 0;
        int64_t run_id;
        size_t k = 0;
        int r;

        if (!all || !items || !outcomes || !index)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                all[i] = run_item_of(&files[i]);       /* a range of the file, or all of it */
        r = move_items_files(all, n, &file_of, &n_files);
        if (r < 0)
                return r;
        file_moved = calloc(MAX(n_files, (size_t) 1), sizeof *file_moved);
        if (!file_moved)
                return -ENOMEM;
        p.file_of = file_of;
        p.file_moved = file_moved;
        mfd = open(fs->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mfd < 0)
                return -errno;
        r = run_create(db, fs->fsid, opts->mount_as ?: fs->mount, all, n, &run_id);
        if (r < 0)
                return r;
        p.run_id = run_id;
        /* until checkpointed, its entries stay queued: a pass killed before it reaches them leaves them to
         * the next one */
        r = db_run_files_waiting(db, run_id, MOVE_REASON_RUNNING);
        if (r < 0)
                log_warning_errno(r, "early pass on %s: failed to keep its files queued until moved: %m", fs->mount);
        /* A queued program that runs already (PID 1, journald, ...) is recorded as such right away, and left
         * out of the donor: it would only make the donor bigger, and a bigger one fits in fewer places near
         * the boot's other files. One that starts while the pass runs is met by the mover. */
        for (size_t i = 0; i < n; i++) {
                if (running_now(mfd, &files[i].file)) {
                        MoveOutcome o = { .result = MOVE_RETRY, .why = MOVE_REASON_RUNNING };

                        snprintf(o.reason, sizeof o.reason, "running executable");
                        record(&p, i, &o);
                        continue;
                }
                items[k] = all[i];
                bytes += move_item_bytes(&all[i]);
                index[k++] = i;
        }
        log_info("early pass on %s: %zu of %zu queued files to move, %.1f MiB", fs->mount,
                 files_in(file_of, index, k, n_files), n_files, bytes / 1048576.0);
        uint64_t near = hot_set_start(db, mfd, fs->fsid, files, n);
        if (near > 0)
                log_info("early pass on %s: the boot's relocated files lie around %.1f MiB", fs->mount,
                         near / 1048576.0);
        MoverOptions o = {
                .mount_fd = mfd,
                .rate_limit_bps = 0,      /* early in the boot the budget is the limit */
                .cancel = cancel,
                .sysfs_dir = sysfs,
                .state_file = state_file,
                .near = near,
                .exec_gate = gate,
                .progress = on_file,
                .userdata = &p,
        };
        r = mover_run(&o, items, k, outcomes, &stats);     /* k == 0 too: it fills stats (no donor) */
        (void) run_finish(db, run_id, r, &stats);
        *ret_moved += p.moved;
        *ret_stopped = *ret_stopped || stats.cancelled;
        if (r < 0)
                return r;
        if (stats.io_error < 0)
                log_error_errno(stats.io_error, "early pass on %s stopped: the filesystem failed under it (%m)", fs->mount);
        log_info("early pass on %s: %" PRIu64 " of %zu files moved%s%s", fs->mount, p.moved, n_files,
                 !stats.cancelled ? "" : early_stop_signal(stop) > 0 ? " (stopped by a signal; the rest waits for the next boot)"
                                                                     : " (EarlyBudgetSec= ran out; the rest waits for the next boot)",
                 mover_donor_where(&stats, ", donor ", where, sizeof where));
        return 0;
}

static int refuse_hold(void *userdata, const FileKey *key, int fd) {
        return -ENOTCONN;
}

int early_pass_run(const EarlyPassOptions *opts) {
        _cleanup_(db_freep) Db *db = NULL;
        _cleanup_free_ char *state_file = NULL;
        FilesystemList fss = {};
        DbRunFile *files = NULL;
        EarlyStop *stop = NULL;
        size_t n = 0;
        atomic_bool cancel;
        _cleanup_(recorder_freep) Recorder *rec = NULL;
        MoverExecGate gate;
        uint64_t moved = 0;
        bool stopped = false;
        int r, sig;

        if (access(opts->db_path, F_OK) < 0) {
                log_info("early pass: no database yet, nothing to do");
                return 0;
        }
        r = db_open(opts->db_path, &db);
        if (r == -EBADMSG) {
                /* seeklessd moves it aside when it starts; the boot goes on either way */
                log_warning("early pass: %s is corrupt or not seekless's, nothing to do (seeklessd moves it aside)",
                            opts->db_path);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "early pass: failed to open %s: %m", opts->db_path);
        if (asprintf(&state_file, "%s/mb_stream_req.saved", opts->state_dir) < 0)
                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
        (void) mover_restore_tunables(state_file);

        /* a pass killed before it finished: what it had not moved is still queued (its entries wait for
         * MOVE_REASON_RUNNING until checkpointed), what it moved is not; this pass takes over */
        r = db_runs_close_waiting(db, MOVE_REASON_RUNNING);
        if (r > 0)
                log_info("early pass: %d earlier pass(es) did not finish; the files they had not moved are queued", r);
        else if (r < 0)
                log_warning_errno(r, "early pass: failed to close the runs of earlier passes, ignoring: %m");
        r = db_retry_entries(db, MOVE_REASON_RUNNING, &files, &n);
        if (r < 0)
                return log_error_errno(r, "early pass: failed to read the queue: %m");
        if (n == 0) {
                log_info("early pass: nothing queued");
                return 0;
        }
        r = mounts_scan("/proc/self/mountinfo", opts->only_filesystems, &fss, NULL);
        if (r < 0) {
                db_run_files_free(files, n);
                return log_error_errno(r, "early pass: failed to enumerate filesystems: %m");
        }

        /* Programs start while the pass runs: the execs of a file it moves wait for the move (mover.h),
         * through an exec thread of our own. Without one, queued executables are not moved. */
        if (opts->no_execs)
                r = 0;
        else {
                r = recorder_new(false, &rec);
                if (r >= 0)
                        r = recorder_start(rec);
        }
        if (r < 0) {
                log_warning_errno(r, "early pass: cannot hold execs (%m): executables are left queued");
                rec = recorder_free(rec);
        } else if (rec)
                recorder_gate_begin(rec);
        gate = rec ? exec_gate_of(rec) : (MoverExecGate) { .hold = refuse_hold };

        atomic_init(&cancel, false);
        r = early_stop_start(opts->budget_usec, &cancel, &stop);
        if (r < 0)
                log_error_errno(r, "early pass: cannot watch its budget and signals, moving nothing: %m");

        /* every filesystem, also once the budget is spent: its pass then moves nothing, but still records
         * which queued programs run already and keeps the rest queued; a signal ends it sooner (what the
         * filesystems left hold stays queued as it was) */
        for (size_t i = 0; i < fss.n && early_stop_signal(stop) == 0; i++) {
                _cleanup_free_ DbRunFile *mine = calloc(n + 1, sizeof *mine);
                size_t k = 0;

                if (!mine)
                        break;
                for (size_t j = 0; j < n; j++)
                        if (files[j].file.key.fsid == fss.items[i].fsid)
                                mine[k++] = files[j];   /* shallow: files[] owns the strings */
                if (k == 0)
                        continue;
                r = pass_on(db, &fss.items[i], opts, mine, k, state_file, &cancel, stop,
                            opts->no_execs ? NULL : &gate, &moved, &stopped);
                if (r < 0)
                        log_warning_errno(r, "early pass on %s failed, ignoring: %m", fss.items[i].mount);
        }

        if (opts->ret_moved)
                *opts->ret_moved = moved;
        if (opts->ret_stopped)
                *opts->ret_stopped = stopped || early_stop_signal(stop) > 0;
        sig = early_stop_signal(stop);
        if (sig > 0)
                log_info("early pass: stopped by SIG%s; what it did not reach waits for the next boot", sigabbrev_np(sig));
        stop = early_stop_free(stop);
        if (rec)
                recorder_gate_end(rec);
        filesystem_list_clear(&fss);
        db_run_files_free(files, n);
        return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl optimize and cancel: start a run (or queue it until the machine is idle), wait for it
 * with a progress bar, and say how it ended. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "common/json.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"

static volatile sig_atomic_t arg_sigint = 0;

static void sigint_handler(int sig) {
        arg_sigint = 1;
}

typedef struct Waiter {
        uint64_t id;                    /* the run we wait for */
        bool gone;                      /* the daemon left the bus, or the bus connection closed */
        sd_bus_message *finished;       /* its RunFinished, once received */
        bool progress;                  /* draw a progress bar on stderr */
        bool bar_shown;
        uint64_t start_usec;            /* CLOCK_MONOTONIC when the run started */
} Waiter;

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

#define PROGRESS_BAR_WIDTH 20
#define MIB (1024.0 * 1024.0)

/* "\r[#####.....] 42/100 files, 12.3/48.0 MiB, ETA 0:07", then clear to the end of the line. */
static void progress_draw(Waiter *w, uint64_t files_done, uint64_t files_total, uint64_t bytes_done,
                          uint64_t bytes_total) {
        char bar[PROGRESS_BAR_WIDTH + 1];
        uint64_t elapsed = now_usec() - w->start_usec;
        size_t filled = 0;

        if (bytes_total > 0)
                filled = (size_t) ((double) MIN(bytes_done, bytes_total) / (double) bytes_total * PROGRESS_BAR_WIDTH);
        else if (files_total > 0)
                filled = (size_t) ((double) MIN(files_done, files_total) / (double) files_total * PROGRESS_BAR_WIDTH);
        memset(bar, '#', filled);
        memset(bar + filled, '.', PROGRESS_BAR_WIDTH - filled);
        bar[PROGRESS_BAR_WIDTH] = 0;

        fprintf(stderr, "\r[%s] %" PRIu64 "/%" PRIu64 " files, %.1f/%.1f MiB", bar, files_done, files_total,
                (double) bytes_done / MIB, (double) bytes_total / MIB);

        /* The rate since the start; no guess before a second has passed. */
        if (elapsed >= USEC_PER_SEC && bytes_done > 0 && bytes_total > bytes_done) {
                uint64_t eta = (uint64_t) ((double) (bytes_total - bytes_done) * (double) elapsed /
                                           (double) bytes_done / USEC_PER_SEC + 0.5);

                if (eta >= 3600)
                        fprintf(stderr, ", ETA %" PRIu64 ":%02" PRIu64 ":%02" PRIu64, eta / 3600, eta / 60 % 60,
                                eta % 60);
                else
                        fprintf(stderr, ", ETA %" PRIu64 ":%02" PRIu64, eta / 60, eta % 60);
        }
        fputs("\033[K", stderr);
        fflush(stderr);
        w->bar_shown = true;
}

static void progress_clear(Waiter *w) {
        if (!w->bar_shown)
                return;
        fputs("\r\033[K", stderr);
        fflush(stderr);
        w->bar_shown = false;
}

static int on_progress(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Waiter *w = userdata;
        uint64_t id, files_done, files_total, bytes_done, bytes_total;

        if (sd_bus_message_read(m, "ttttt", &id, &files_done, &files_total, &bytes_done, &bytes_total) < 0)
                return 0; /* not what the interface promises: ignore it */
        if (id == w->id && w->progress && !w->finished)
                progress_draw(w, files_done, files_total, bytes_done, bytes_total);
        return 0;
}

static int on_run_finished(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Waiter *w = userdata;
        uint64_t id;

        if (sd_bus_message_read(m, "t", &id) < 0 || id != w->id || w->finished)
                return 0;
        w->finished = sd_bus_message_ref(m);
        return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Waiter *w = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (streq(name, SEEKLESS_BUS_NAME) && isempty(new_owner))
                w->gone = true;
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Waiter *w = userdata;

        w->gone = true;
        return 0;
}

/* Installed before Optimize is called, so that no signal of the run can be missed. */
static int add_optimize_matches(sd_bus *bus, Waiter *w) {
        int r;

        r = sd_bus_match_signal(bus, NULL, SEEKLESS_BUS_NAME, SEEKLESS_BUS_PATH, SEEKLESS_BUS_INTERFACE,
                                "Progress", on_progress, w);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, SEEKLESS_BUS_NAME, SEEKLESS_BUS_PATH, SEEKLESS_BUS_INTERFACE,
                                        "RunFinished", on_run_finished, w);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                     "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                     "arg0='" SEEKLESS_BUS_NAME "'",
                                     on_name_owner_changed, w);
        if (r >= 0)
                /* Synthesized locally by sd-bus when the connection closes. */
                r = sd_bus_match_signal(bus, NULL, NULL, "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, w);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to the daemon's signals: %m");
        return 0;
}

static bool bus_error_is_disconnect(int r) {
        return r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE || r == -ESHUTDOWN;
}

static int log_daemon_gone(void) {
        return log_error_errno(SYNTHETIC_ERRNO(ECONNRESET), "seeklessd went away during the optimization.");
}

/* Runs the bus until RunFinished for w->id arrives. SIGINT asks the daemon to cancel (once; a second one
 * ends seeklessctl), and we keep waiting for the run to report how it ended. */
static int wait_for_run(sd_bus *bus, Waiter *w, const char *command) {
        struct sigaction sa = { .sa_handler = sigint_handler }, old_sa;
        bool cancel_sent = false;
        int r;

        (void) sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, &old_sa) < 0)
                return log_error_errno(errno, "Failed to install a SIGINT handler: %m");

        for (;;) {
                if (w->finished)
                        break;
                if (w->gone || !sd_bus_is_open(bus)) {
                        progress_clear(w);
                        r = log_daemon_gone();
                        goto finish;
                }

                if (arg_sigint && !cancel_sent) {
                        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

                        cancel_sent = true;
                        (void) sigaction(SIGINT, &old_sa, NULL);
                        progress_clear(w);
                        fputs("Cancelling...\n", stderr);
                        /* Whatever it says, the run ends with RunFinished, which is what we wait for. */
                        (void) call_daemon(bus, SEEKLESS_BUS_INTERFACE, "Cancel", command,
                                           "cancel the optimization", NULL, &reply, NULL);
                        continue;
                }

                r = sd_bus_process(bus, NULL);
                if (r < 0 && bus_error_is_disconnect(r))
                        w->gone = true;
                else if (r < 0) {
                        progress_clear(w);
                        r = log_error_errno(r, "Failed to process bus messages: %m");
                        goto finish;
                }
                if (r != 0)
                        continue;

                /* Wake up now and then: a SIGINT just before the wait would not interrupt it. */
                r = sd_bus_wait(bus, 250 * USEC_PER_MSEC);
                if (r < 0 && bus_error_is_disconnect(r))
                        w->gone = true;
                else if (r < 0 && r != -EINTR) {
                        progress_clear(w);
                        r = log_error_errno(r, "Failed to wait for bus messages: %m");
                        goto finish;
                }
        }

        progress_clear(w);
        r = 0;
finish:
        if (!cancel_sent)
                (void) sigaction(SIGINT, &old_sa, NULL);
        return r;
}

/* What to show as skipped after a run: the planner's list, with the reasons the run gave for the same
 * paths (the run knows better), then the files only the run skipped. */
static int merge_skipped(const Skipped *planned, size_t n_planned, const Skipped *run, size_t n_run,
                         Skipped **ret, size_t *ret_n) {
        _cleanup_free_ Skipped *merged = NULL;
        _cleanup_free_ bool *used = NULL;
        size_t n = 0;

        merged = calloc(n_planned + n_run + 1, sizeof *merged);
        used = calloc(n_run + 1, sizeof *used);
        if (!merged || !used)
                return -ENOMEM;

        for (size_t i = 0; i < n_planned; i++) {
                Skipped k = planned[i];

                for (size_t j = 0; j < n_run; j++)
                        if (streq(run[j].path, k.path)) {
                                if (!used[j])
                                        k = (Skipped) { run[j].path, run[j].reason, false };
                                used[j] = true;
                        }
                merged[n++] = k;
        }
        for (size_t j = 0; j < n_run; j++)
                if (!used[j])
                        merged[n++] = (Skipped) { run[j].path, run[j].reason, false };

        *ret = TAKE_PTR(merged);
        *ret_n = n;
        return 0;
}

/* "Skipped:" then "  PATH: REASON" lines (without the title and indentation for --no-legend). */
static void skipped_lines(const Skipped *k, size_t n) {
        if (n == 0)
                return;
        if (arg_legend)
                puts("\nSkipped:");
        for (size_t i = 0; i < n; i++)
                printf("%s%s: %s%s\n", arg_legend ? "  " : "", k[i].path, k[i].reason,
                       k[i].retry ? " (will retry)" : "");
}

static int optimize_print(uint64_t id, const char *state, uint64_t files, uint64_t bytes, bool started,
                          const Skipped *k, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        _cleanup_(table_freep) Table *skipped = NULL;
        char size[FORMAT_BYTES_MAX];
        int r;

        if (arg_json == JSON_OFF) {
                if (id == 0)
                        puts("Nothing to move: the layout is already in place.");
                else if (started)
                        printf("Optimization %" PRIu64 " started: %" PRIu64 " file%s, %s.\n", id, files,
                               files == 1 ? "" : "s", format_bytes(size, sizeof size, bytes));
                else
                        printf("Moved %" PRIu64 " file%s (%s), %s.\n", files, files == 1 ? "" : "s",
                               format_bytes(size, sizeof size, bytes), state);
                skipped_lines(k, n);
                return 0;
        }

        r = skipped_table(k, n, false, &skipped);
        if (r < 0)
                return log_oom();
        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        if ((r = json_begin_object(w)) >= 0 && (r = json_key_uint(w, "id", id)) >= 0) {
                if (started)
                        (void) ((r = json_key_uint(w, "files", files)) >= 0 &&
                                (r = json_key_uint(w, "bytes", bytes)) >= 0);
                else
                        (void) ((r = json_key_string(w, "state", state)) >= 0 &&
                                (r = json_key_uint(w, "moved_files", files)) >= 0 &&
                                (r = json_key_uint(w, "moved_bytes", bytes)) >= 0);
                if (r >= 0 && (r = json_key(w, "skipped")) >= 0 && (r = table_write_json(skipped, w)) >= 0)
                        r = json_end_object(w);
        }
        return json_done(w, r);
}

/* optimize --when-idle: queue it in the daemon and return. */
static int optimize_when_idle(sd_bus *bus, char **mounts, const char *command) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        const char *idle;
        uint64_t id;
        int queued;
        int r;

        r = call_with_mounts(bus, "OptimizeWhenIdle", command, "queue the optimization", mounts, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "bts", &queued, &id, &idle);
        if (r < 0)
                return log_parse_error(r);

        if (arg_json == JSON_OFF) {
                if (queued)
                        puts("Optimization queued: it starts by itself when the machine is idle.");
                else if (id > 0)
                        printf("Optimization %" PRIu64 " started at once: the machine is idle.\n", id);
                else
                        puts("Nothing to move: the layout is already in place.");
                print_field(stdout, STATUS_KEY_WIDTH, "Idle policy", "%s", idle);
                return 0;
        }

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        if ((r = json_begin_object(w)) >= 0 && (r = json_key_bool(w, "queued", queued)) >= 0 &&
            (r = json_key_uint(w, "id", id)) >= 0 && (r = json_key_string(w, "idle", idle)) >= 0)
                r = json_end_object(w);
        return json_done(w, r);
}

int verb_optimize(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *skipped_reply = NULL;
        _cleanup_free_ Skipped *planned = NULL, *run = NULL, *merged = NULL;
        size_t n_planned = 0, n_run = 0, n_merged = 0;
        _cleanup_strv_free_ char **mounts = NULL;
        Waiter w = {};
        uint64_t id, bytes, moved_files, moved_bytes;
        uint32_t files, n_run_skipped;
        const char *state;
        int r;

        r = mounts_from_args(argv + 1, argv[0], &mounts);
        if (r < 0)
                return r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (arg_dry_run)
                return run_plan(bus, mounts, argv[0]);
        if (arg_when_idle)
                return optimize_when_idle(bus, mounts, argv[0]);

        if (!arg_no_block) {
                r = add_optimize_matches(bus, &w);
                if (r < 0)
                        return r;
        }

        r = call_with_mounts(bus, "Optimize", argv[0], "start the optimization", mounts, &reply);
        if (r < 0)
                return r;
        w.start_usec = now_usec();

        r = sd_bus_message_read(reply, "tut", &id, &files, &bytes);
        if (r >= 0)
                r = read_skipped(reply, true, &planned, &n_planned);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_parse_error(r);

        if (id == 0)
                return optimize_print(0, "nothing to do", 0, 0, false, planned, n_planned);
        if (arg_no_block)
                return optimize_print(id, NULL, files, bytes, true, planned, n_planned);

        w.id = id;
        w.progress = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
        r = wait_for_run(bus, &w, argv[0]);
        if (r < 0) {
                w.finished = sd_bus_message_unref(w.finished);
                return r;
        }

        r = sd_bus_message_rewind(w.finished, true);
        if (r >= 0)
                r = sd_bus_message_read(w.finished, "tsttu", &id, &state, &moved_files, &moved_bytes, &n_run_skipped);
        if (r >= 0 && n_run_skipped > 0) {
                /* the signal carries how many; which ones only root may ask */
                r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetRunSkipped", argv[0], "list the files not moved",
                                NULL, &skipped_reply, "t", id);
                if (r < 0)
                        goto finish;
                r = read_skipped(skipped_reply, false, &run, &n_run);
        }
        if (r >= 0)
                r = merge_skipped(planned, n_planned, run, n_run, &merged, &n_merged);
        if (r >= 0)
                r = optimize_print(id, state, moved_files, moved_bytes, false, merged, n_merged);
        else if (r == -ENOMEM)
                r = log_oom();
        else
                r = log_parse_error(r);

        if (r >= 0 && !streq(state, "done")) {
                if (streq(state, "failed"))
                        log_error("Optimization %" PRIu64 " failed; see seeklessd's log.", id);
                r = -ECANCELED; /* exit status 1; stdout already says how the run ended */
        }
finish:
        w.finished = sd_bus_message_unref(w.finished);
        return r;
}

/* ---------------------------------------------------------------------------------------------------- */
/* cancel */

int verb_cancel(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *reply_queued = NULL;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int cancelled, dropped;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        /* the running one first: while it stops, the queued request and paused runs go */
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "Cancel", argv[0], "cancel the optimization", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "b", &cancelled);
        if (r < 0)
                return log_parse_error(r);
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "CancelQueued", argv[0], "drop the queued optimization", NULL,
                        &reply_queued, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply_queued, "b", &dropped);
        if (r < 0)
                return log_parse_error(r);

        if (arg_json == JSON_OFF) {
                if (cancelled)
                        puts("Cancelling the running optimization.");
                if (dropped)
                        puts("Dropped the queued optimization.");
                if (!cancelled && !dropped)
                        puts("No optimization is running or queued.");
                return 0;
        }

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        if ((r = json_begin_object(w)) >= 0 && (r = json_key_bool(w, "cancelled", cancelled)) >= 0 &&
            (r = json_key_bool(w, "dropped", dropped)) >= 0)
                r = json_end_object(w);
        return json_done(w, r);
}

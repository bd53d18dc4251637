/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Method calls on org.seekless.Seekless1.Manager with fuzzed arguments, as real messages: the Manager's
 * vtable is served on one end of a socketpair (a private, direct D-Bus connection, in this process) and a
 * client on the other end sends each call, so that the arguments reach the handlers exactly as sd-bus
 * hands them over, after its own checks of the message (signature, UTF-8), which no fuzzed byte can skip
 * on a real bus either. The caller is root (the same uid), so the handlers go past bus_check_root() and
 * parse everything. Behind them: a database with a boot profile, two programs' profiles, a finished and an
 * interrupted run (made through the daemon's own functions at start, restored after every input), one
 * watched filesystem (the scratch directory: no profile file is on it, so planning and optimizing move
 * nothing), the plan worker and the event loop.
 *
 * Input: up to 16 lines, one call each: the method name, optionally ":SIG" to send other arguments than
 * it takes ("", "s", "as", "t", "u" or "ss"), then its arguments separated by tabs ("as": every field;
 * "t"/"u": a decimal number). In a field, byte 0x1e stands for a newline and 0x1f for a tab, and a leading "$MNT" for the
 * watched mount point. "Get" and
 * "GetAll" are org.freedesktop.DBus.Properties' (interface, property), "Introspect" is
 * org.freedesktop.DBus.Introspectable's. Checked: every call gets a reply within 10 s, an error reply
 * carries one of the errors the interface documents, and no optimization is left running. */
#include <sqlite3.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "common/bus-names.h"
#include "fuzz-util.h"
#include "manager/manager.h"
#include "profile/profile.h"

#define CALLS_MAX 16
#define REPLY_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define BOOT_ID "0123456789abcdef0123456789abcdef"

static Manager *m;
static sd_bus *client;
static sqlite3 *pristine;       /* the database as made at start, in memory */
static char db_path[4096];

typedef struct Method {
        const char *name;
        const char *interface;
        const char *signature;
} Method;

static const Method methods[] = {
        { "ListProfiles",         SEEKLESS_BUS_INTERFACE, "" },
        { "GetProfile",           SEEKLESS_BUS_INTERFACE, "s" },
        { "GetProfileRanges",     SEEKLESS_BUS_INTERFACE, "s" },
        { "GetProfileMetadata",   SEEKLESS_BUS_INTERFACE, "s" },
        { "ListSessions",         SEEKLESS_BUS_INTERFACE, "" },
        { "ForgetProfile",        SEEKLESS_BUS_INTERFACE, "s" },
        { "ForgetAll",            SEEKLESS_BUS_INTERFACE, "" },
        { "Plan",                 SEEKLESS_BUS_INTERFACE, "as" },
        { "Optimize",             SEEKLESS_BUS_INTERFACE, "as" },
        { "OptimizeWhenIdle",     SEEKLESS_BUS_INTERFACE, "as" },
        { "Cancel",               SEEKLESS_BUS_INTERFACE, "" },
        { "CancelQueued",         SEEKLESS_BUS_INTERFACE, "" },
        { "GetRunSkipped",        SEEKLESS_BUS_INTERFACE, "t" },
        { "Report",               SEEKLESS_BUS_INTERFACE, "s" },
        { "GetLayout",            SEEKLESS_BUS_INTERFACE, "s" },
        { "Get",              "org.freedesktop.DBus.Properties", "ss" },
        { "GetAll",           "org.freedesktop.DBus.Properties", "s" },
        { "Introspect",       "org.freedesktop.DBus.Introspectable", "" },
};

static const char *const signatures[] = { "", "s", "as", "t", "u", "ss" };

/* The errors a client may get: the interface's own, and sd-bus's for arguments it refuses. */
static const char *const expected_errors[] = {
        SEEKLESS_ERROR_NO_SUCH_PROFILE,
        SEEKLESS_ERROR_DATABASE,
        SEEKLESS_ERROR_BUSY,
        SEEKLESS_ERROR_NOT_WATCHED,
        SEEKLESS_ERROR_NO_SUCH_RUN,
        SD_BUS_ERROR_INVALID_ARGS,
        SD_BUS_ERROR_UNKNOWN_PROPERTY,
        SD_BUS_ERROR_UNKNOWN_INTERFACE,
};

/* ---- the database behind the calls ---- */

static int no_mount(uint64_t fsid, void *userdata) {
        return -ENODEV;
}

static void add_session(Db *db, const char *profile, ProfileKind kind, uid_t uid, unsigned first, unsigned n) {
        ProfileOptions o = { .keep_boots = 10, .keep_launches = 5, .boot_id = BOOT_ID, .open_mount = no_mount };
        DbSessionFile files[8];
        char paths[8][64];
        int64_t id;

        FUZZ_ASSERT(n <= ELEMENTSOF(files));
        for (unsigned i = 0; i < n; i++) {
                unsigned ino = first + i;

                snprintf(paths[i], sizeof paths[i], "/usr/lib/seekless-fuzz/file-%u%s", ino,
                         ino % 3 == 0 ? "\nwith a newline" : "");
                files[i] = (DbSessionFile) {
                        .key = { .fsid = 0x5eec1e55, .handle_type = 1, .handle_len = 8,
                                 .handle = { (uint8_t) ino, (uint8_t) (ino >> 8), 0, 0, 1 } },
                        .ino = ino, .generation = 1, .path = paths[i], .size = 4096 * (i + 1),
                        .offset_usec = 1000 * i,
                };
        }
        FUZZ_ASSERT(db_add_session(db, &(DbSession) { .profile = profile, .kind = kind, .boot_id = BOOT_ID,
                                                      .started_realtime_usec = 1700000000000000, .complete = true,
                                                      .uid = uid, .files = files, .n_files = n },
                                   kind == PROFILE_BOOT ? 10 : 5, &id) >= 0);
        FUZZ_ASSERT(profile_merge(db, profile, kind, id, &o) >= 0);
}

static void make_db(Db *db) {
        int64_t ids[] = { 1, 2, 3 }, run;
        uint64_t sizes[] = { 4096, 8192, 12288 }, ph[] = { 1000, 2000 }, len[] = { 10, 20 };
        int64_t mtimes[] = { 0, 0, 0 };
        DbQuality q = { .taken = 1700000000000000, .files = 3, .extents = 5, .discontinuities = 4, .span = 1 << 20,
                        .modeled_ms = 12.5 };

        add_session(db, "boot", PROFILE_BOOT, 0, 1, 6);
        add_session(db, "boot", PROFILE_BOOT, 0, 2, 6);
        add_session(db, "/usr/bin/prog", PROFILE_APP, 1000, 10, 4);
        add_session(db, "/usr/bin/prog", PROFILE_APP, 1000, 11, 4);
        add_session(db, "/usr/bin/weird\\name\n", PROFILE_APP, 0, 20, 2);
        FUZZ_ASSERT(db_quality_set(db, "boot", QUALITY_BEFORE, &q) >= 0);
        q.discontinuities = 0;
        FUZZ_ASSERT(db_quality_set(db, "boot", QUALITY_AFTER, &q) >= 0);
        FUZZ_ASSERT(db_extents_before_set(db, 1, ph, len, 2) >= 0);
        /* a finished run and an interrupted one (the queue's CancelQueued closes it) */
        FUZZ_ASSERT(db_run_create(db, 0x5eec1e55, "/", ids, sizes, mtimes, NULL, NULL, 3, &run) >= 0);
        FUZZ_ASSERT(db_run_file_set(db, run, 0, RUN_FILE_DONE, MOVE_REASON_NONE, "", 4096) >= 0);
        FUZZ_ASSERT(db_run_file_set(db, run, 1, RUN_FILE_RETRY, MOVE_REASON_RUNNING, "running executable", 0) >= 0);
        FUZZ_ASSERT(db_run_finish(db, run, RUN_DONE, 1, 1, 4096) >= 0);
        FUZZ_ASSERT(db_run_create(db, 0x5eec1e55, "/", ids, sizes, mtimes, NULL, NULL, 3, &run) >= 0);
}

/* Copies the whole database from one connection into another (SQLite's online backup). */
static void copy_db(sqlite3 *to, sqlite3 *from) {
        sqlite3_backup *b = sqlite3_backup_init(to, "main", from, "main");

        FUZZ_ASSERT(b);
        FUZZ_ASSERT(sqlite3_backup_step(b, -1) == SQLITE_DONE);
        FUZZ_ASSERT(sqlite3_backup_finish(b) == SQLITE_OK);
}

static void restore_db(void) {
        sqlite3 *c = NULL;

        FUZZ_ASSERT(sqlite3_open_v2(db_path, &c, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
        FUZZ_ASSERT(sqlite3_busy_timeout(c, 5000) == SQLITE_OK);
        copy_db(c, pristine);
        FUZZ_ASSERT(sqlite3_close(c) == SQLITE_OK);
}

/* ---- the Manager and the connection ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        sd_bus *server = NULL;
        sd_id128_t id;
        struct stat st;
        int fds[2];

        fuzz_log_setup();
        FUZZ_ASSERT(seekless_bus_errors_register() >= 0);
        FUZZ_ASSERT(manager_new(&m) == 0);
        fuzz_path(db_path, sizeof db_path, "seekless.db");
        m->db_path = strdup(db_path);
        m->state_dir = strdup(fuzz_dir());
        m->run_dir = strdup(fuzz_dir());
        FUZZ_ASSERT(m->db_path && m->state_dir && m->run_dir);
        memcpy(m->boot_id, BOOT_ID, sizeof m->boot_id);
        /* the idle policy never finds the machine idle long enough: OptimizeWhenIdle only queues */
        m->config.idle_usec = USEC_PER_DAY;

        FUZZ_ASSERT(db_open(db_path, &m->db) >= 0);
        make_db(m->db);
        FUZZ_ASSERT(sqlite3_open(":memory:", &pristine) == SQLITE_OK);
        {
                sqlite3 *c = NULL;
                FUZZ_ASSERT(sqlite3_open_v2(db_path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
                copy_db(pristine, c);
                FUZZ_ASSERT(sqlite3_close(c) == SQLITE_OK);
        }
        FUZZ_ASSERT(manager_refresh_counts(m) >= 0);

        FUZZ_ASSERT(stat(fuzz_dir(), &st) == 0);
        m->filesystems.items = calloc(1, sizeof *m->filesystems.items);
        FUZZ_ASSERT(m->filesystems.items);
        m->filesystems.n = 1;
        m->filesystems.items[0] = (Filesystem) { .dev = st.st_dev, .mount = strdup(fuzz_dir()),
                                                 .fstype = strdup("tmpfs"), .whole = true };
        FUZZ_ASSERT(m->filesystems.items[0].mount && m->filesystems.items[0].fstype);
        FUZZ_ASSERT(fsid_of_path(fuzz_dir(), &m->filesystems.items[0].fsid) >= 0);

        FUZZ_ASSERT(sd_event_new(&m->event) >= 0);
        FUZZ_ASSERT(plan_worker_new(m->event, db_path, &m->plan_worker) >= 0);

        /* a run that ended, with files it left, for GetRunSkipped */
        {
                PlanSkip *skipped = NULL;
                size_t n = 0;
                FUZZ_ASSERT(plan_skip_add(&skipped, &n, "/usr/bin/prog", "running executable", true) >= 0);
                FUZZ_ASSERT(plan_skip_add(&skipped, &n, "/usr/lib/a\nb", "open for writing", true) >= 0);
                manager_keep_finished_run(m, 1, &skipped, &n);
        }

        FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
        FUZZ_ASSERT(sd_bus_new(&server) >= 0);
        FUZZ_ASSERT(sd_bus_set_fd(server, fds[0], fds[0]) >= 0);
        FUZZ_ASSERT(sd_id128_randomize(&id) >= 0);
        FUZZ_ASSERT(sd_bus_set_server(server, 1, id) >= 0);
        FUZZ_ASSERT(sd_bus_start(server) >= 0);
        FUZZ_ASSERT(sd_bus_attach_event(server, m->event, 0) >= 0);
        FUZZ_ASSERT(manager_bus_add_objects(m, server) >= 0);
        m->bus = server;

        FUZZ_ASSERT(sd_bus_new(&client) >= 0);
        FUZZ_ASSERT(sd_bus_set_fd(client, fds[1], fds[1]) >= 0);
        FUZZ_ASSERT(sd_bus_start(client) >= 0);
        FUZZ_ASSERT(sd_bus_attach_event(client, m->event, 0) >= 0);
        return 0;
}

/* ---- one input ---- */

typedef struct Reply {
        bool done;
        char error[256];
} Reply;

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Reply *r = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        r->done = true;
        if (e)
                snprintf(r->error, sizeof r->error, "%s", e->name);
        return 0;
}

static uint64_t now_mono(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* A field's bytes as a string: 0x1e is a newline, 0x1f a tab; NUL ends it (a D-Bus string holds none);
 * a leading "$MNT" stands for the watched filesystem's mount point (the scratch directory). */
static char *field(const char *p, size_t n) {
        const char *mnt = m->filesystems.items[0].mount;
        char *s;

        if (n >= 4 && memcmp(p, "$MNT", 4) == 0) {
                FUZZ_ASSERT(asprintf(&s, "%s%.*s", mnt, (int) (n - 4), p + 4) >= 0);
        } else {
                s = strndup(p, n);
                FUZZ_ASSERT(s);
        }
        for (char *c = s; *c; c++)
                if (*c == 0x1e)
                        *c = '\n';
                else if (*c == 0x1f)
                        *c = '\t';
        return s;
}

static int append_args(sd_bus_message *msg, const char *sig, char **args, size_t n) {
        int r = 0;

        if (streq(sig, "s"))
                return sd_bus_message_append_basic(msg, 's', n > 0 ? args[0] : "");
        if (streq(sig, "ss")) {
                r = sd_bus_message_append_basic(msg, 's', n > 0 ? args[0] : "");
                return r < 0 ? r : sd_bus_message_append_basic(msg, 's', n > 1 ? args[1] : "");
        }
        if (streq(sig, "t")) {
                uint64_t t = n > 0 ? strtoull(args[0], NULL, 10) : 0;
                return sd_bus_message_append_basic(msg, 't', &t);
        }
        if (streq(sig, "u")) {
                uint32_t u = n > 0 ? (uint32_t) strtoul(args[0], NULL, 10) : 0;
                return sd_bus_message_append_basic(msg, 'u', &u);
        }
        if (streq(sig, "as")) {
                r = sd_bus_message_open_container(msg, 'a', "s");
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = sd_bus_message_append_basic(msg, 's', args[i]);
                return r < 0 ? r : sd_bus_message_close_container(msg);
        }
        return 0;
}

static void call(const char *line, size_t len) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        const char *tab = memchr(line, '\t', len), *colon;
        size_t name_len = (size_t) ((tab ?: line + len) - line), n_args = 0;
        char *args[64];
        const Method *method = NULL;
        const char *sig;
        Reply reply = {};
        uint64_t deadline;

        colon = memchr(line, ':', name_len);
        for (size_t i = 0; i < ELEMENTSOF(methods) && !method; i++)
                if (strlen(methods[i].name) == (size_t) ((colon ?: line + name_len) - line) &&
                    memcmp(methods[i].name, line, strlen(methods[i].name)) == 0)
                        method = &methods[i];
        if (!method)
                return;
        sig = method->signature;
        if (colon) {
                size_t sl = (size_t) (line + name_len - colon - 1);
                for (size_t i = 0; i < ELEMENTSOF(signatures); i++)
                        if (strlen(signatures[i]) == sl && memcmp(signatures[i], colon + 1, sl) == 0)
                                sig = signatures[i];
        }
        for (const char *p = tab; p && n_args < ELEMENTSOF(args); ) {
                const char *next = memchr(p + 1, '\t', (size_t) (line + len - p - 1));
                args[n_args++] = field(p + 1, (size_t) ((next ?: line + len) - p - 1));
                p = next;
        }

        FUZZ_ASSERT(sd_bus_message_new_method_call(client, &msg, NULL, SEEKLESS_BUS_PATH, method->interface,
                                                   method->name) >= 0);
        if (append_args(msg, sig, args, n_args) < 0)
                goto finish;    /* not valid UTF-8: sd-bus sends no such message */
        FUZZ_ASSERT(sd_bus_call_async(client, NULL, msg, on_reply, &reply, REPLY_TIMEOUT_USEC) >= 0);

        deadline = now_mono() + REPLY_TIMEOUT_USEC;
        while (!reply.done) {
                if (now_mono() > deadline) {
                        fprintf(stderr, "no reply to %s within 10 s\n", method->name);
                        abort();
                }
                FUZZ_ASSERT(sd_event_run(m->event, 100 * USEC_PER_MSEC) >= 0);
        }
        if (fuzz_verbose())
                fprintf(stderr, "%s(%s): %s\n", method->name, sig, reply.error[0] ? reply.error : "ok");
        if (reply.error[0]) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(expected_errors) && !known; i++)
                        known = streq(reply.error, expected_errors[i]);
                if (!known) {
                        fprintf(stderr, "%s returned the unexpected error %s\n", method->name, reply.error);
                        abort();
                }
        }
finish:
        for (size_t i = 0; i < n_args; i++)
                free(args[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;

        m->idle.busy_since_usec = now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 0; p < end && i < CALLS_MAX; i++) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));

                call(p, (size_t) ((nl ?: end) - p));
                p = nl ? nl + 1 : end;
        }
        /* an optimization could only start on the scratch directory, which holds no profile file */
        FUZZ_ASSERT(!m->runs.optimizer && !m->runs.preparing);
        (void) manager_idle_drop(m);
        restore_db();
        FUZZ_ASSERT(manager_refresh_counts(m) >= 0);
        return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "config.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "verbs.h"

#define EXIT_USAGE 2

/* Width of the keys in the status block: strlen("Filesystems"). */
#define STATUS_KEY_WIDTH 11

static JsonFormat arg_json = JSON_OFF;
static bool arg_legend = true;
static bool arg_all = false;

/* ---------------------------------------------------------------------------------------------------- */
/* Talking to the daemon */

static int acquire_bus(sd_bus **ret) {
        int r;

        r = sd_bus_open_system(ret);
        if (r == -ENOENT || r == -ECONNREFUSED)
                /* Nothing listens on the bus socket, so certainly nobody owns our name there. */
                return log_error_errno(r, "seeklessd is not running (cannot connect to the system bus: %m).");
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        return 0;
}

/* Logs one line for a failed call to the daemon, made on behalf of command (the verb, for the permission
 * message), trying to do what (for the generic message). profile is the name a NoSuchProfile error is
 * about, or NULL. Returns r (negative). */
static int log_bus_call_error(const sd_bus_error *error, int r, const char *command, const char *what,
                              const char *profile) {
        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                return log_error_errno(r, "seeklessd is not running (no owner of %s on the system bus).",
                                       SEEKLESS_BUS_NAME);
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED))
                return log_error_errno(r, "Permission denied: %s needs root (file paths are private).",
                                       command);
        if (profile && sd_bus_error_has_name(error, SEEKLESS_ERROR_NO_SUCH_PROFILE))
                return log_error_errno(r, "No profile named '%s'.", profile);

        if (error->message)
                return log_error_errno(r, "Failed to %s: %s", what, error->message);
        return log_error_errno(r, "Failed to %s: %m", what);
}

static int log_parse_error(int r) {
        return log_error_errno(r, "Failed to parse the daemon's reply: %m");
}

/* Calls member on the daemon's object without activating the service: if seeklessd is not running we want
 * to say so, not start it. types and the arguments after it are the call's input, as for
 * sd_bus_message_append(). */
static int call_daemon(sd_bus *bus, const char *interface, const char *member, const char *command,
                       const char *what, const char *profile, sd_bus_message **ret_reply,
                       const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SEEKLESS_BUS_NAME, SEEKLESS_BUS_PATH, interface, member);
        if (r < 0)
                return log_error_errno(r, "Failed to create bus message: %m");

        r = sd_bus_message_set_auto_start(m, false);
        if (r < 0)
                return log_error_errno(r, "Failed to disable service activation: %m");

        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return log_error_errno(r, "Failed to append arguments: %m");
        }

        r = sd_bus_call(bus, m, 0, &error, ret_reply);
        if (r < 0)
                return log_bus_call_error(&error, r, command, what, profile);
        return 0;
}

/* Grow *p (of *allocated elements of size each) to hold at least need elements. */
static int grow_array(void *p, size_t *allocated, size_t need, size_t size) {
        void **pp = p;
        size_t a;
        void *n;

        if (need <= *allocated)
                return 0;
        a = MAX(need, MAX(*allocated * 2, (size_t) 16));
        n = reallocarray(*pp, a, size);
        if (!n)
                return -ENOMEM;
        *pp = n;
        *allocated = a;
        return 0;
}

static int json_writer_new_stdout(JsonWriter **ret) {
        *ret = json_writer_new(stdout, arg_json);
        return *ret ? 0 : log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory.");
}

static int json_done(JsonWriter *w, int r) {
        if (r >= 0)
                r = json_writer_finish(w);
        if (r < 0)
                return log_error_errno(r, "Failed to write JSON: %m");
        return 0;
}

static int log_oom(void) {
        return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory.");
}

static int log_table_error(int r) {
        return r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to print table: %m");
}

/* ---------------------------------------------------------------------------------------------------- */
/* status */

typedef struct Filesystem {
        const char *mount, *device, *fstype;
} Filesystem;

/* Strings point into the reply message. */
typedef struct StatusInfo {
        const char *version, *status;
        int boot_recording;
        uint32_t active_launches, profiles, sessions, files;
        uint64_t events_received, overflows, database_size;
        Filesystem *filesystems;
        size_t n_filesystems, allocated_filesystems;
} StatusInfo;

static int read_filesystems(sd_bus_message *m, StatusInfo *info) {
        const char *mount, *device, *fstype;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "a(sss)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(sss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sss)", &mount, &device, &fstype)) > 0) {
                if (grow_array(&info->filesystems, &info->allocated_filesystems, info->n_filesystems + 1,
                               sizeof *info->filesystems) < 0)
                        return -ENOMEM;
                info->filesystems[info->n_filesystems++] = (Filesystem) { mount, device, fstype };
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_status(sd_bus_message *m, StatusInfo *info) {
        static const struct {
                const char *name;
                char type;
                size_t offset;
        } props[] = {
                { "Version",        's', offsetof(StatusInfo, version)         },
                { "Status",         's', offsetof(StatusInfo, status)          },
                { "BootRecording",  'b', offsetof(StatusInfo, boot_recording)  },
                { "ActiveLaunches", 'u', offsetof(StatusInfo, active_launches) },
                { "Profiles",       'u', offsetof(StatusInfo, profiles)        },
                { "Sessions",       'u', offsetof(StatusInfo, sessions)        },
                { "Files",          'u', offsetof(StatusInfo, files)           },
                { "EventsReceived", 't', offsetof(StatusInfo, events_received) },
                { "Overflows",      't', offsetof(StatusInfo, overflows)       },
                { "DatabaseSize",   't', offsetof(StatusInfo, database_size)   },
        };
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;

        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;
                bool known = false;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;

                for (size_t i = 0; i < ELEMENTSOF(props); i++) {
                        char sig[2] = { props[i].type, 0 };

                        if (!streq(name, props[i].name))
                                continue;
                        r = sd_bus_message_read(m, "v", sig, (uint8_t *) info + props[i].offset);
                        known = true;
                        break;
                }
                if (!known) {
                        if (streq(name, "Filesystems"))
                                r = read_filesystems(m, info);
                        else
                                r = sd_bus_message_skip(m, "v"); /* newer daemon, newer property */
                }
                if (r < 0)
                        return r;

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;

        return sd_bus_message_exit_container(m);
}

static int status_json(const StatusInfo *info) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_string(w, "version", info->version ?: "")) >= 0 &&
            (r = json_key_string(w, "status", info->status ?: "")) >= 0 &&
            (r = json_key_bool(w, "boot_recording", info->boot_recording)) >= 0 &&
            (r = json_key_uint(w, "active_launches", info->active_launches)) >= 0 &&
            (r = json_key_uint(w, "profiles", info->profiles)) >= 0 &&
            (r = json_key_uint(w, "sessions", info->sessions)) >= 0 &&
            (r = json_key_uint(w, "files", info->files)) >= 0 &&
            (r = json_key_uint(w, "database_bytes", info->database_size)) >= 0 &&
            (r = json_key_uint(w, "events_received", info->events_received)) >= 0 &&
            (r = json_key_uint(w, "overflows", info->overflows)) >= 0 &&
            (r = json_key(w, "filesystems")) >= 0 &&
            (r = json_begin_array(w)) >= 0) {
                for (size_t i = 0; r >= 0 && i < info->n_filesystems; i++)
                        if ((r = json_begin_object(w)) >= 0 &&
                            (r = json_key_string(w, "mount", info->filesystems[i].mount)) >= 0 &&
                            (r = json_key_string(w, "device", info->filesystems[i].device)) >= 0 &&
                            (r = json_key_string(w, "fstype", info->filesystems[i].fstype)) >= 0)
                                r = json_end_object(w);
                if (r >= 0 && (r = json_end_array(w)) >= 0)
                        r = json_end_object(w);
        }

        return json_done(w, r);
}

static void status_human(const StatusInfo *info) {
        char size[FORMAT_BYTES_MAX];

        print_field(stdout, STATUS_KEY_WIDTH, "Version", "%s", info->version ?: "n/a");
        print_field(stdout, STATUS_KEY_WIDTH, "Status", "%s", info->status ?: "n/a");
        print_field(stdout, STATUS_KEY_WIDTH, "Recording", "boot %s, launches %" PRIu32,
                    info->boot_recording ? "yes" : "no", info->active_launches);
        print_field(stdout, STATUS_KEY_WIDTH, "Profiles", "%" PRIu32, info->profiles);
        print_field(stdout, STATUS_KEY_WIDTH, "Sessions", "%" PRIu32, info->sessions);
        print_field(stdout, STATUS_KEY_WIDTH, "Files", "%" PRIu32, info->files);
        print_field(stdout, STATUS_KEY_WIDTH, "Database", "%s",
                    format_bytes(size, sizeof size, info->database_size));

        if (info->n_filesystems == 0)
                print_field(stdout, STATUS_KEY_WIDTH, "Filesystems", "none");
        for (size_t i = 0; i < info->n_filesystems; i++)
                print_field(stdout, STATUS_KEY_WIDTH, i == 0 ? "Filesystems" : NULL, "%s (%s, %s)",
                            info->filesystems[i].mount, info->filesystems[i].device,
                            info->filesystems[i].fstype);

        print_field(stdout, STATUS_KEY_WIDTH, "Events", "%" PRIu64 " received, %" PRIu64 " overflows",
                    info->events_received, info->overflows);
}

static int verb_status(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        StatusInfo info = {};
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, "org.freedesktop.DBus.Properties", "GetAll", argv[0], "get daemon status", NULL,
                        &reply, "s", SEEKLESS_BUS_INTERFACE);
        if (r < 0)
                return r;

        r = read_status(reply, &info);
        if (r < 0) {
                free(info.filesystems);
                return log_parse_error(r);
        }

        if (arg_json != JSON_OFF)
                r = status_json(&info);
        else
                status_human(&info);

        free(info.filesystems);
        return r;
}

/* ---------------------------------------------------------------------------------------------------- */
/* profiles */

typedef struct ProfileInfo {
        const char *name, *kind;
        uint32_t sessions, files;
        uint64_t bytes, updated_usec;
} ProfileInfo;

static int profiles_json(const ProfileInfo *p, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        r = json_begin_array(w);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "name", p[i].name)) >= 0 &&
                    (r = json_key_string(w, "kind", p[i].kind)) >= 0 &&
                    (r = json_key_uint(w, "sessions", p[i].sessions)) >= 0 &&
                    (r = json_key_uint(w, "files", p[i].files)) >= 0 &&
                    (r = json_key_uint(w, "bytes", p[i].bytes)) >= 0 &&
                    (r = json_key_uint(w, "updated_usec", p[i].updated_usec)) >= 0)
                        r = json_end_object(w);
        if (r >= 0)
                r = json_end_array(w);

        return json_done(w, r);
}

static int profiles_human(const ProfileInfo *p, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0) {
                if (arg_legend)
                        puts("No profiles recorded yet.");
                return 0;
        }

        t = table_new("NAME", "KIND", "SESSIONS", "FILES", "SIZE", "UPDATED");
        if (!t)
                return log_oom();
        for (size_t c = 2; c <= 4; c++)
                (void) table_set_align(t, c, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                char size[FORMAT_BYTES_MAX], updated[FORMAT_TIMESTAMP_MAX];

                if ((r = table_add_cell(t, p[i].name)) >= 0 &&
                    (r = table_add_cell(t, p[i].kind)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, p[i].sessions)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, p[i].files)) >= 0 &&
                    (r = table_add_cell(t, format_bytes(size, sizeof size, p[i].bytes))) >= 0)
                        r = table_add_cell(t, format_timestamp(updated, sizeof updated, p[i].updated_usec));
        }
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                printf("\n%zu profile%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

static int verb_profiles(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ ProfileInfo *profiles = NULL;
        size_t n = 0, allocated = 0;
        ProfileInfo p;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListProfiles", argv[0], "list profiles", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(ssuutt)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(ssuutt)", &p.name, &p.kind, &p.sessions, &p.files,
                                        &p.bytes, &p.updated_usec)) > 0) {
                if (grow_array(&profiles, &allocated, n + 1, sizeof *profiles) < 0)
                        return log_oom();
                profiles[n++] = p;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? profiles_json(profiles, n) : profiles_human(profiles, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* show NAME */

typedef struct FileInfo {
        const char *path;
        uint64_t size;
        uint32_t seen;
        double score;
} FileInfo;

static int show_json(const char *name, const char *kind, const FileInfo *f, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_string(w, "name", name)) >= 0 &&
            (r = json_key_string(w, "kind", kind)) >= 0 &&
            (r = json_key(w, "files")) >= 0 &&
            (r = json_begin_array(w)) >= 0) {
                for (size_t i = 0; r >= 0 && i < n; i++)
                        if ((r = json_begin_object(w)) >= 0 &&
                            (r = json_key_string(w, "path", f[i].path)) >= 0 &&
                            (r = json_key_uint(w, "size", f[i].size)) >= 0 &&
                            (r = json_key_uint(w, "seen", f[i].seen)) >= 0 &&
                            (r = json_key_double(w, "score", f[i].score)) >= 0)
                                r = json_end_object(w);
                if (r >= 0 && (r = json_end_array(w)) >= 0)
                        r = json_end_object(w);
        }

        return json_done(w, r);
}

static int show_human(const char *name, const char *kind, const FileInfo *f, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        char size[FORMAT_BYTES_MAX];
        uint64_t total = 0;
        int r = 0;

        for (size_t i = 0; i < n; i++)
                total += f[i].size;

        if (arg_legend)
                printf("%s (%s), %zu file%s, %s\n", name, kind, n, n == 1 ? "" : "s",
                       format_bytes(size, sizeof size, total));
        if (n == 0)
                return 0;

        t = table_new("POS", "PATH", "SIZE", "SEEN", "SCORE");
        if (!t)
                return log_oom();
        (void) table_set_align(t, 0, TABLE_ALIGN_RIGHT);
        for (size_t c = 2; c <= 4; c++)
                (void) table_set_align(t, c, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = table_add_cellf(t, "%zu", i + 1)) >= 0 &&
                    (r = table_add_cell(t, f[i].path)) >= 0 &&
                    (r = table_add_cell(t, format_bytes(size, sizeof size, f[i].size))) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, f[i].seen)) >= 0)
                        r = table_add_cellf(t, "%.3f", f[i].score);
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);
        return 0;
}

static int verb_show(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ FileInfo *files = NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1], *kind;
        size_t n = 0, allocated = 0;
        FileInfo f;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (asprintf(&what, "get profile '%s'", name) < 0) {
                what = NULL;
                return log_oom();
        }

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetProfile", argv[0], what, name, &reply, "s", name);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "s", &kind);
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_enter_container(reply, 'a', "(stud)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(stud)", &f.path, &f.size, &f.seen, &f.score)) > 0) {
                if (grow_array(&files, &allocated, n + 1, sizeof *files) < 0)
                        return log_oom();
                files[n++] = f;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? show_json(name, kind, files, n) : show_human(name, kind, files, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* sessions */

typedef struct SessionInfo {
        uint64_t id;
        const char *profile, *kind, *boot_id;
        uint64_t started_usec, duration_usec;
        uint32_t files;
        int complete;
} SessionInfo;

static int sessions_json(const SessionInfo *s, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        r = json_begin_array(w);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_uint(w, "id", s[i].id)) >= 0 &&
                    (r = json_key_string(w, "profile", s[i].profile)) >= 0 &&
                    (r = json_key_string(w, "kind", s[i].kind)) >= 0 &&
                    (r = json_key_string(w, "boot_id", s[i].boot_id)) >= 0 &&
                    (r = json_key_uint(w, "started_usec", s[i].started_usec)) >= 0 &&
                    (r = json_key_uint(w, "duration_usec", s[i].duration_usec)) >= 0 &&
                    (r = json_key_uint(w, "files", s[i].files)) >= 0 &&
                    (r = json_key_bool(w, "complete", s[i].complete)) >= 0)
                        r = json_end_object(w);
        if (r >= 0)
                r = json_end_array(w);

        return json_done(w, r);
}

static int sessions_human(const SessionInfo *s, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0) {
                if (arg_legend)
                        puts("No sessions recorded yet.");
                return 0;
        }

        t = table_new("ID", "PROFILE", "KIND", "BOOT", "STARTED", "DURATION", "FILES", "COMPLETE");
        if (!t)
                return log_oom();
        (void) table_set_align(t, 0, TABLE_ALIGN_RIGHT);
        (void) table_set_align(t, 5, TABLE_ALIGN_RIGHT);
        (void) table_set_align(t, 6, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                char started[FORMAT_TIMESTAMP_MAX], duration[FORMAT_TIMESPAN_MAX];

                if ((r = table_add_cellf(t, "%" PRIu64, s[i].id)) >= 0 &&
                    (r = table_add_cell(t, s[i].profile)) >= 0 &&
                    (r = table_add_cell(t, s[i].kind)) >= 0 &&
                    (r = table_add_cellf(t, "%.8s", s[i].boot_id)) >= 0 &&
                    (r = table_add_cell(t, format_timestamp(started, sizeof started, s[i].started_usec))) >= 0 &&
                    (r = table_add_cell(t, format_timespan(duration, sizeof duration, s[i].duration_usec))) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, s[i].files)) >= 0)
                        r = table_add_cell(t, s[i].complete ? "yes" : "no");
        }
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                printf("\n%zu session%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

static int verb_sessions(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ SessionInfo *sessions = NULL;
        size_t n = 0, allocated = 0;
        SessionInfo s;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListSessions", argv[0], "list sessions", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(tsssttub)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(tsssttub)", &s.id, &s.profile, &s.kind, &s.boot_id,
                                        &s.started_usec, &s.duration_usec, &s.files, &s.complete)) > 0) {
                if (grow_array(&sessions, &allocated, n + 1, sizeof *sessions) < 0)
                        return log_oom();
                sessions[n++] = s;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? sessions_json(sessions, n) : sessions_human(sessions, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* forget NAME | forget --all */

static int forget_print(uint32_t n, const char *name) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        if (arg_json == JSON_OFF) {
                if (name)
                        printf("Forgot profile '%s'.\n", name);
                else
                        printf("Forgot %" PRIu32 " profile%s.\n", n, n == 1 ? "" : "s");
                return 0;
        }

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        if ((r = json_begin_object(w)) >= 0 && (r = json_key_uint(w, "forgotten", n)) >= 0)
                r = json_end_object(w);
        return json_done(w, r);
}

static int verb_forget(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *what = NULL;
        uint32_t n;
        int r;

        if (arg_all && argc > 1) {
                log_error("Specify either a profile NAME or --all, not both.");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (!arg_all && argc < 2) {
                log_error("'forget' needs a profile NAME or --all.");
                verb_usage_hint();
                return -EUSAGE;
        }

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (arg_all) {
                r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ForgetAll", argv[0], "forget all profiles", NULL,
                                &reply, NULL);
                if (r < 0)
                        return r;
                r = sd_bus_message_read(reply, "u", &n);
                if (r < 0)
                        return log_parse_error(r);
                return forget_print(n, NULL);
        }

        if (asprintf(&what, "forget profile '%s'", argv[1]) < 0) {
                what = NULL;
                return log_oom();
        }
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ForgetProfile", argv[0], what, argv[1], NULL, "s",
                        argv[1]);
        if (r < 0)
                return r;
        return forget_print(1, argv[1]);
}

/* ---------------------------------------------------------------------------------------------------- */

static int help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n"
               "\n"
               "Query and manage seeklessd, the boot and launch read-order recorder.\n"
               "\n"
               "Commands:\n"
               "  status               Show the daemon's state (default)\n"
               "  profiles             List recorded profiles\n"
               "  show NAME            Show a profile's files in read order\n"
               "  sessions             List recorded sessions\n"
               "  forget NAME          Delete a profile and its sessions\n"
               "  forget --all         Delete every profile and session\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help\n"
               "     --version         Show package version\n"
               "     --json=pretty|short|off\n"
               "                       Generate JSON output (plain --json: pretty on a terminal,\n"
               "                       short otherwise)\n"
               "     --no-legend       Do not show headers and footers\n"
               "  -a --all             With 'forget': delete every profile\n"
               "\n"
               "'status' works for every user; the other commands need root.\n"
               "See the seeklessctl(1) man page for details.\n",
               program_invocation_short_name);
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_JSON,
                ARG_NO_LEGEND,
        };
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h'           },
                { "version",   no_argument,       NULL, ARG_VERSION   },
                { "json",      optional_argument, NULL, ARG_JSON      },
                { "no-legend", no_argument,       NULL, ARG_NO_LEGEND },
                { "all",       no_argument,       NULL, 'a'           },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "ha", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        return help();
                case ARG_VERSION:
                        printf("seeklessctl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_JSON:
                        if (!optarg) {
                                arg_json = isatty(STDOUT_FILENO) ? JSON_PRETTY : JSON_SHORT;
                                break;
                        }
                        arg_json = json_format_from_string(optarg);
                        if (arg_json < 0) {
                                log_error("Invalid --json= value '%s', expected pretty, short or off.", optarg);
                                verb_usage_hint();
                                return -EUSAGE;
                        }
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case 'a':
                        arg_all = true;
                        break;
                case '?':
                        /* getopt_long() already said what is wrong */
                        verb_usage_hint();
                        return -EUSAGE;
                default:
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Unhandled option %c.", c);
                }

        if (arg_all && !(optind < argc && streq(argv[optind], "forget"))) {
                log_error("--all is only valid with 'forget'.");
                verb_usage_hint();
                return -EUSAGE;
        }

        return 1;
}

static int run(int argc, char *argv[]) {
        static const Verb verbs[] = {
                { "status",   VERB_ANY, 1, VERB_DEFAULT, verb_status   },
                { "profiles", VERB_ANY, 1, 0,            verb_profiles },
                { "show",     2,        2, 0,            verb_show     },
                { "sessions", VERB_ANY, 1, 0,            verb_sessions },
                { "forget",   VERB_ANY, 2, 0,            verb_forget   },
                {}
        };
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        return dispatch_verb(argc, argv, optind, verbs, NULL);
}

int main(int argc, char *argv[]) {
        int r;

        log_open();

        /* Only improves errno mapping of our error names; messages are chosen by name anyway. */
        r = seekless_bus_errors_register();
        if (r < 0)
                (void) log_debug_errno(r, "Failed to register D-Bus error map, ignoring: %m");

        r = run(argc, argv);

        if (fflush(stdout) != 0 || ferror(stdout)) {
                if (r >= 0)
                        r = log_error_errno(errno > 0 ? errno : EIO, "Failed to write output: %m");
        }

        if (r == -EUSAGE)
                return EXIT_USAGE;
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

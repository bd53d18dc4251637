/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "config.h"
#include "escape.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "svg.h"
#include "verbs.h"

#define EXIT_USAGE 2

/* Width of the keys in the status block: strlen("Filesystems"). */
#define STATUS_KEY_WIDTH 11

static JsonFormat arg_json = JSON_OFF;
static bool arg_legend = true;
static bool arg_all = false;
static bool arg_dry_run = false;
static bool arg_no_block = false;
static bool arg_when_idle = false;
static const char *arg_svg = NULL;

/* ---------------------------------------------------------------------------------------------------- */
/* Talking to the daemon */

static int acquire_bus(sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *address = getenv("DBUS_SYSTEM_BUS_ADDRESS"), *unique;
        char at[256] = "";
        int r;

        if (address)
                snprintf(at, sizeof at, " at %s", address);
        r = sd_bus_open_system(&bus);
        /* A tcp: connection is made in the background: wait for it (and the Hello), so that a bus that is not
         * there is told here, the same way for every transport. */
        if (r >= 0)
                r = sd_bus_get_unique_name(bus, &unique);
        if (r == -ENOENT || r == -ECONNREFUSED || r == -ENOTCONN || r == -ECONNRESET)
                /* Nothing listens on the bus socket, so certainly nobody owns our name there. */
                return log_error_errno(r, "seeklessd is not running (cannot connect to the system bus%s: %m).", at);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus%s: %m", at);
        *ret = TAKE_PTR(bus);
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
        if (sd_bus_error_has_name(error, SEEKLESS_ERROR_BUSY))
                return log_error_errno(r, "An optimization is already running (seeklessctl cancel stops it).");
        if (sd_bus_error_has_name(error, SEEKLESS_ERROR_NOT_WATCHED))
                /* The daemon names the mount point and says why. */
                return log_error_errno(r, "%s", error->message ?: "Not a watched read-write ext4 filesystem.");

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

/* A NAME or mount point from the command line in the escaped form paths have on the bus (escape.h): as it
 * is when it reads as one, so that what profiles or plan shows can be pasted back; escaped when it holds
 * bytes an escaped form never has (a name typed raw, e.g. $'/tmp/\xff'). */
static char *arg_to_bus(const char *arg) {
        _cleanup_free_ char *raw = NULL;

        if (escape_is_clean(arg) && path_unescape(arg, &raw) >= 0)
                return strdup(arg);
        return path_escape(arg);
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
        const char *version, *status, *idle_status;
        int boot_recording, optimizing;
        uint32_t active_launches, profiles, sessions, files;
        uint64_t events_received, overflows, database_size, optimization_id;
        Filesystem *filesystems;
        size_t n_filesystems, allocated_filesystems;
        /* (mount, why) pairs: relocation is off there */
        const char *off_mount[16], *off_reason[16];
        size_t n_off;
        /* QueuedOptimization: when (0 = nothing queued) and which mount points (none = every one) */
        uint64_t queued_usec;
        const char **queued_mounts;
        size_t n_queued_mounts, allocated_queued_mounts;
} StatusInfo;

static void status_info_done(StatusInfo *info) {
        free(info->filesystems);
        free(info->queued_mounts);
}

static int write_relocation_off(JsonWriter *w, const StatusInfo *info) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < info->n_off; i++)
                if ((r = json_begin_object(w)) >= 0 && (r = json_key_string(w, "mount", info->off_mount[i])) >= 0 &&
                    (r = json_key_string(w, "reason", info->off_reason[i])) >= 0)
                        r = json_end_object(w);
        return r;
}

static int read_relocation_off(sd_bus_message *m, StatusInfo *info) {
        const char *mount, *why;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "a(ss)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(ss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(ss)", &mount, &why)) > 0)
                if (info->n_off < ELEMENTSOF(info->off_mount)) {
                        info->off_mount[info->n_off] = mount;
                        info->off_reason[info->n_off++] = why;
                }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_queued(sd_bus_message *m, StatusInfo *info) {
        const char *mount;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "(tas)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'r', "tas");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "t", &info->queued_usec);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "s", &mount)) > 0) {
                if (grow_array(&info->queued_mounts, &info->allocated_queued_mounts, info->n_queued_mounts + 1,
                               sizeof *info->queued_mounts) < 0)
                        return -ENOMEM;
                info->queued_mounts[info->n_queued_mounts++] = mount;
        }
        if (r < 0)
                return r;
        for (int i = 0; i < 3; i++) {
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        return 0;
}

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
                { "Optimizing",     'b', offsetof(StatusInfo, optimizing)      },
                { "OptimizationId", 't', offsetof(StatusInfo, optimization_id) },
                { "IdleStatus",     's', offsetof(StatusInfo, idle_status)     },
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
                        else if (streq(name, "RelocationOff"))
                                r = read_relocation_off(m, info);
                        else if (streq(name, "QueuedOptimization"))
                                r = read_queued(m, info);
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

/* null, or {"queued_usec": N, "mounts": [...]} */
static int write_queued(JsonWriter *w, const StatusInfo *info) {
        int r;

        if (info->queued_usec == 0)
                return json_null(w);
        if ((r = json_begin_object(w)) < 0 || (r = json_key_uint(w, "queued_usec", info->queued_usec)) < 0 ||
            (r = json_key(w, "mounts")) < 0 || (r = json_begin_array(w)) < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < info->n_queued_mounts; i++)
                r = json_string(w, info->queued_mounts[i]);
        if (r < 0 || (r = json_end_array(w)) < 0)
                return r;
        return json_end_object(w);
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
            (r = json_key_bool(w, "optimizing", info->optimizing)) >= 0 &&
            (r = json_key_uint(w, "optimization_id", info->optimization_id)) >= 0 &&
            (r = json_key_string(w, "idle", info->idle_status ?: "")) >= 0 &&
            (r = json_key(w, "queued")) >= 0 && (r = write_queued(w, info)) >= 0 &&
            (r = json_key(w, "relocation_off")) >= 0 && (r = json_begin_array(w)) >= 0 &&
            (r = write_relocation_off(w, info)) >= 0 && (r = json_end_array(w)) >= 0 &&
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

/* "every watched filesystem" or "/, /home"; NULL on allocation failure. */
static char *join_mounts(const char *const *mounts, size_t n) {
        size_t len = 1;
        char *s, *p;

        if (n == 0)
                return strdup("every watched filesystem");
        for (size_t i = 0; i < n; i++)
                len += strlen(mounts[i]) + 2;
        s = p = malloc(len);
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++)
                p = stpcpy(stpcpy(p, i > 0 ? ", " : ""), mounts[i]);
        return s;
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
        if (info->optimizing)
                print_field(stdout, STATUS_KEY_WIDTH, "Optimizing", "yes (optimization %" PRIu64 ")",
                            info->optimization_id);
        else
                print_field(stdout, STATUS_KEY_WIDTH, "Optimizing", "no");
        if (info->idle_status)
                print_field(stdout, STATUS_KEY_WIDTH, "Idle policy", "%s", info->idle_status);
        if (info->queued_usec != 0) {
                char when[FORMAT_TIMESTAMP_MAX];
                _cleanup_free_ char *mounts = NULL;

                mounts = join_mounts(info->queued_mounts, info->n_queued_mounts);
                print_field(stdout, STATUS_KEY_WIDTH, "Queued", "optimization of %s since %s, starts when idle",
                            mounts ?: "the given filesystems", format_timestamp(when, sizeof when, info->queued_usec));
        }
        for (size_t i = 0; i < info->n_off; i++)
                print_field(stdout, STATUS_KEY_WIDTH, i == 0 ? "Relocation" : NULL, "off on %s: %s",
                            info->off_mount[i], info->off_reason[i]);
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
                status_info_done(&info);
                return r == -ENOMEM ? log_oom() : log_parse_error(r);
        }

        if (arg_json != JSON_OFF)
                r = status_json(&info);
        else
                status_human(&info);

        status_info_done(&info);
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
        _cleanup_free_ char *what = NULL, *name = arg_to_bus(argv[1]);
        const char *kind;
        size_t n = 0, allocated = 0;
        FileInfo f;
        int r;

        if (!name)
                return log_oom();
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
        _cleanup_free_ char *what = NULL, *name = NULL;
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

        name = arg_to_bus(argv[1]);
        if (!name || asprintf(&what, "forget profile '%s'", name) < 0) {
                what = NULL;
                return log_oom();
        }
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ForgetProfile", argv[0], what, name, NULL, "s", name);
        if (r < 0)
                return r;
        return forget_print(1, name);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Layout quality, shared by plan and report */

/* One layout quality tuple: see seeklessd(8), LAYOUT QUALITY. */
typedef struct Quality {
        uint64_t files, extents, discontinuities, span;
        double modeled_read_ms;
} Quality;

#define QUALITY_TYPES "ttttd"
#define QUALITY_ARGS(q) &(q)->files, &(q)->extents, &(q)->discontinuities, &(q)->span, &(q)->modeled_read_ms

static int json_quality(JsonWriter *w, const Quality *q) {
        int r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_uint(w, "files", q->files)) >= 0 &&
            (r = json_key_uint(w, "extents", q->extents)) >= 0 &&
            (r = json_key_uint(w, "discontinuities", q->discontinuities)) >= 0 &&
            (r = json_key_uint(w, "span", q->span)) >= 0 &&
            (r = json_key_double(w, "modeled_read_ms", q->modeled_read_ms)) >= 0)
                r = json_end_object(w);
        return r;
}

/* "→" where the locale can show it, "->" otherwise. seeklessctl never calls setlocale(), so look at the
 * environment the way setlocale() would. */
static const char *glyph_arrow(void) {
        const char *l = getenv("LC_ALL");

        if (isempty(l))
                l = getenv("LC_CTYPE");
        if (isempty(l))
                l = getenv("LANG");
        if (l && (strcasestr(l, "UTF-8") || strcasestr(l, "utf8")))
                return "\u2192";
        return "->";
}

/* The mount points given, for the daemon: a relative one made absolute here (the daemon matches them
 * against its mount points, and normalises "//", "/./" and a trailing "/"). */
static int mounts_from_args(char **args, const char *command, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        while (args[n])
                n++;
        l = calloc(n + 1, sizeof *l);
        if (!l)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                if (args[i][0] == '/')
                        l[i] = arg_to_bus(args[i]);
                else {
                        /* relative to where we are, which only we know */
                        _cleanup_free_ char *resolved = realpath(args[i], NULL);

                        if (!resolved) {
                                _cleanup_free_ char *shown = path_escape(args[i]);
                                log_error_errno(errno, "'%s' expects mount points; '%s': %m", command,
                                                shown ?: "?");
                                verb_usage_hint();
                                return -EUSAGE;
                        }
                        l[i] = path_escape(resolved);
                }
                if (!l[i])
                        return log_oom();
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Appends the mount points (argv after the verb) as an "as" argument. */
static int append_mounts(sd_bus_message *m, char **mounts) {
        return sd_bus_message_append_strv(m, mounts);
}

/* Calls Plan or Optimize, whose only input is the list of mount points. */
static int call_with_mounts(sd_bus *bus, const char *member, const char *command, const char *what,
                            char **mounts, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SEEKLESS_BUS_NAME, SEEKLESS_BUS_PATH,
                                           SEEKLESS_BUS_INTERFACE, member);
        if (r < 0)
                return log_error_errno(r, "Failed to create bus message: %m");
        r = sd_bus_message_set_auto_start(m, false);
        if (r < 0)
                return log_error_errno(r, "Failed to disable service activation: %m");
        r = append_mounts(m, mounts);
        if (r < 0)
                return log_error_errno(r, "Failed to append arguments: %m");

        r = sd_bus_call(bus, m, 0, &error, ret_reply);
        if (r < 0)
                return log_bus_call_error(&error, r, command, what, NULL);
        return 0;
}

/* A skipped file: from Plan and Optimize (with retry) or RunFinished (without). */
typedef struct Skipped {
        const char *path, *reason;
        int retry;
} Skipped;

static int read_skipped(sd_bus_message *m, bool with_retry, Skipped **ret, size_t *ret_n) {
        _cleanup_free_ Skipped *skipped = NULL;
        size_t n = 0, allocated = 0;
        Skipped k = {};
        int r;

        r = sd_bus_message_enter_container(m, 'a', with_retry ? "(ssb)" : "(ss)");
        if (r < 0)
                return r;
        while ((r = with_retry ? sd_bus_message_read(m, "(ssb)", &k.path, &k.reason, &k.retry)
                               : sd_bus_message_read(m, "(ss)", &k.path, &k.reason)) > 0) {
                if (grow_array(&skipped, &allocated, n + 1, sizeof *skipped) < 0)
                        return -ENOMEM;
                skipped[n++] = k;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(skipped);
        *ret_n = n;
        return 0;
}

/* The skipped files as a JSON array member; with_retry adds the "retry" field (plan). */
static int json_skipped(JsonWriter *w, const Skipped *k, size_t n, bool with_retry) {
        int r;

        if ((r = json_key(w, "skipped")) < 0 || (r = json_begin_array(w)) < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "path", k[i].path)) >= 0 &&
                    (r = json_key_string(w, "reason", k[i].reason)) >= 0 &&
                    (!with_retry || (r = json_key_bool(w, "retry", k[i].retry)) >= 0))
                        r = json_end_object(w);
        return r < 0 ? r : json_end_array(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* plan [MOUNT...], optimize --dry-run */

typedef struct PlanFilesystem {
        const char *mount;
        int in_place;
        uint64_t files, bytes;
} PlanFilesystem;

typedef struct PlanFile {
        const char *mount, *path, *profile;
        uint64_t size;
} PlanFile;

typedef struct PlanProfile {
        const char *name;
        Quality now, expected;
} PlanProfile;

/* Arrays own nothing but themselves: strings point into the reply. */
typedef struct Plan {
        PlanFilesystem *filesystems;
        PlanFile *files;
        Skipped *skipped;
        PlanProfile *profiles;
        size_t n_filesystems, n_files, n_skipped, n_profiles;
} Plan;

static void plan_done(Plan *p) {
        free(p->filesystems);
        free(p->files);
        free(p->skipped);
        free(p->profiles);
}

static int read_plan(sd_bus_message *m, Plan *p) {
        size_t allocated;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sbtt)");
        if (r < 0)
                return r;
        allocated = 0;
        for (PlanFilesystem f;
             (r = sd_bus_message_read(m, "(sbtt)", &f.mount, &f.in_place, &f.files, &f.bytes)) > 0;) {
                if (grow_array(&p->filesystems, &allocated, p->n_filesystems + 1, sizeof *p->filesystems) < 0)
                        return -ENOMEM;
                p->filesystems[p->n_filesystems++] = f;
        }
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;

        r = sd_bus_message_enter_container(m, 'a', "(ssst)");
        if (r < 0)
                return r;
        allocated = 0;
        for (PlanFile f; (r = sd_bus_message_read(m, "(ssst)", &f.mount, &f.path, &f.profile, &f.size)) > 0;) {
                if (grow_array(&p->files, &allocated, p->n_files + 1, sizeof *p->files) < 0)
                        return -ENOMEM;
                p->files[p->n_files++] = f;
        }
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;

        r = read_skipped(m, true, &p->skipped, &p->n_skipped);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(m, 'a', "(s" QUALITY_TYPES QUALITY_TYPES ")");
        if (r < 0)
                return r;
        allocated = 0;
        for (PlanProfile q;
             (r = sd_bus_message_read(m, "(s" QUALITY_TYPES QUALITY_TYPES ")", &q.name, QUALITY_ARGS(&q.now),
                                      QUALITY_ARGS(&q.expected))) > 0;) {
                if (grow_array(&p->profiles, &allocated, p->n_profiles + 1, sizeof *p->profiles) < 0)
                        return -ENOMEM;
                p->profiles[p->n_profiles++] = q;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int plan_json(const Plan *p) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) < 0 || (r = json_key(w, "filesystems")) < 0 ||
            (r = json_begin_array(w)) < 0)
                return json_done(w, r);
        for (size_t i = 0; r >= 0 && i < p->n_filesystems; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "mount", p->filesystems[i].mount)) >= 0 &&
                    (r = json_key_bool(w, "in_place", p->filesystems[i].in_place)) >= 0 &&
                    (r = json_key_uint(w, "files", p->filesystems[i].files)) >= 0 &&
                    (r = json_key_uint(w, "bytes", p->filesystems[i].bytes)) >= 0)
                        r = json_end_object(w);
        if (r < 0 || (r = json_end_array(w)) < 0 || (r = json_key(w, "files")) < 0 ||
            (r = json_begin_array(w)) < 0)
                return json_done(w, r);
        for (size_t i = 0; r >= 0 && i < p->n_files; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "mount", p->files[i].mount)) >= 0 &&
                    (r = json_key_string(w, "path", p->files[i].path)) >= 0 &&
                    (r = json_key_string(w, "profile", p->files[i].profile)) >= 0 &&
                    (r = json_key_uint(w, "size", p->files[i].size)) >= 0)
                        r = json_end_object(w);
        if (r < 0 || (r = json_end_array(w)) < 0 ||
            (r = json_skipped(w, p->skipped, p->n_skipped, true)) < 0 ||
            (r = json_key(w, "profiles")) < 0 || (r = json_begin_array(w)) < 0)
                return json_done(w, r);
        for (size_t i = 0; r >= 0 && i < p->n_profiles; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "name", p->profiles[i].name)) >= 0 &&
                    (r = json_key(w, "now")) >= 0 &&
                    (r = json_quality(w, &p->profiles[i].now)) >= 0 &&
                    (r = json_key(w, "expected")) >= 0 &&
                    (r = json_quality(w, &p->profiles[i].expected)) >= 0)
                        r = json_end_object(w);
        if (r >= 0 && (r = json_end_array(w)) >= 0)
                r = json_end_object(w);

        return json_done(w, r);
}

/* "Skipped:" and a PATH REASON table; "(will retry)" after the reasons of files worth retrying. */
static int skipped_human(const Skipped *k, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0)
                return 0;

        t = table_new("PATH", "REASON");
        if (!t)
                return log_oom();
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = table_add_cell(t, k[i].path)) >= 0)
                        r = table_add_cellf(t, "%s%s", k[i].reason, k[i].retry ? " (will retry)" : "");
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                puts("\nSkipped:");
        else
                putchar('\n');
        r = table_print(t, stdout, arg_legend);
        return r < 0 ? log_table_error(r) : 0;
}

static int plan_human(const Plan *p) {
        _cleanup_(table_freep) Table *files = NULL, *quality = NULL;
        const char *arrow = glyph_arrow();
        char size[FORMAT_BYTES_MAX];
        int r = 0;

        if (p->n_filesystems == 0 && arg_legend)
                puts("No filesystems to optimize.");
        for (size_t i = 0; i < p->n_filesystems; i++)
                if (p->filesystems[i].in_place)
                        printf("%s: already in place\n", p->filesystems[i].mount);
                else
                        printf("%s: %" PRIu64 " file%s, %s to move\n", p->filesystems[i].mount,
                               p->filesystems[i].files, p->filesystems[i].files == 1 ? "" : "s",
                               format_bytes(size, sizeof size, p->filesystems[i].bytes));

        if (p->n_files > 0) {
                files = table_new("POS", "PATH", "PROFILE", "SIZE");
                if (!files)
                        return log_oom();
                (void) table_set_align(files, 0, TABLE_ALIGN_RIGHT);
                (void) table_set_align(files, 3, TABLE_ALIGN_RIGHT);
                for (size_t i = 0; r >= 0 && i < p->n_files; i++)
                        if ((r = table_add_cellf(files, "%zu", i + 1)) >= 0 &&
                            (r = table_add_cell(files, p->files[i].path)) >= 0 &&
                            (r = table_add_cell(files, p->files[i].profile)) >= 0)
                                r = table_add_cell(files, format_bytes(size, sizeof size, p->files[i].size));
                if (r >= 0) {
                        putchar('\n');
                        r = table_print(files, stdout, arg_legend);
                }
                if (r < 0)
                        return log_table_error(r);
        }

        r = skipped_human(p->skipped, p->n_skipped);
        if (r < 0 || p->n_profiles == 0)
                return r;

        quality = table_new("NAME", "FILES", "EXTENTS", "DISCONT", "SPAN", "MODELED");
        if (!quality)
                return log_oom();
        for (size_t c = 1; c <= 5; c++)
                (void) table_set_align(quality, c, TABLE_ALIGN_RIGHT);
        for (size_t i = 0; r >= 0 && i < p->n_profiles; i++) {
                const Quality *a = &p->profiles[i].now, *b = &p->profiles[i].expected;
                char span_a[FORMAT_BYTES_MAX], span_b[FORMAT_BYTES_MAX];

                if ((r = table_add_cell(quality, p->profiles[i].name)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64, a->files)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64 " %s %" PRIu64, a->extents, arrow, b->extents)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64 " %s %" PRIu64, a->discontinuities, arrow,
                                         b->discontinuities)) >= 0 &&
                    (r = table_add_cellf(quality, "%s %s %s", format_bytes(span_a, sizeof span_a, a->span), arrow,
                                         format_bytes(span_b, sizeof span_b, b->span))) >= 0)
                        r = table_add_cellf(quality, "%.1f ms %s %.1f ms", a->modeled_read_ms, arrow,
                                            b->modeled_read_ms);
        }
        if (r >= 0) {
                putchar('\n');
                r = table_print(quality, stdout, arg_legend);
        }
        return r < 0 ? log_table_error(r) : 0;
}

static int run_plan(sd_bus *bus, char **mounts, const char *command) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Plan p = {};
        int r;

        r = call_with_mounts(bus, "Plan", command, "plan the optimization", mounts, &reply);
        if (r < 0)
                return r;

        r = read_plan(reply, &p);
        if (r < 0)
                r = r == -ENOMEM ? log_oom() : log_parse_error(r);
        else
                r = arg_json != JSON_OFF ? plan_json(&p) : plan_human(&p);
        plan_done(&p);
        return r;
}

static int verb_plan(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **mounts = NULL;
        int r;

        r = mounts_from_args(argv + 1, argv[0], &mounts);
        if (r < 0)
                return r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        return run_plan(bus, mounts, argv[0]);
}

/* ---------------------------------------------------------------------------------------------------- */
/* optimize [MOUNT...] [--dry-run] [--no-block] */

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
                if (r >= 0 && (r = json_skipped(w, k, n, false)) >= 0)
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

static int verb_optimize(int argc, char *argv[], void *userdata) {
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

static int verb_cancel(int argc, char *argv[], void *userdata) {
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

/* ---------------------------------------------------------------------------------------------------- */
/* report [NAME] [--svg FILE] */

typedef struct ReportInfo {
        const char *name;
        Quality now, before;
        uint64_t before_usec;   /* when "before" was taken; 0: never optimized, before is meaningless */
} ReportInfo;

static int report_json(const ReportInfo *p, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        r = json_begin_array(w);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "name", p[i].name)) >= 0 &&
                    (r = json_key_uint(w, "files", p[i].now.files)) >= 0 &&
                    (r = json_key_uint(w, "extents", p[i].now.extents)) >= 0 &&
                    (r = json_key_uint(w, "discontinuities", p[i].now.discontinuities)) >= 0 &&
                    (r = json_key_uint(w, "span", p[i].now.span)) >= 0 &&
                    (r = json_key_double(w, "modeled_read_ms", p[i].now.modeled_read_ms)) >= 0 &&
                    (r = json_key(w, "before")) >= 0 &&
                    (r = p[i].before_usec > 0 ? json_quality(w, &p[i].before) : json_null(w)) >= 0 &&
                    (r = json_key_uint(w, "before_taken_usec", p[i].before_usec)) >= 0)
                        r = json_end_object(w);
        if (r >= 0)
                r = json_end_array(w);

        return json_done(w, r);
}

static int report_human(const ReportInfo *p, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0) {
                if (arg_legend)
                        puts("No profiles recorded yet.");
                return 0;
        }

        t = table_new("NAME", "FILES", "EXTENTS", "DISCONT", "SPAN", "MODELED-MS", "BEFORE-MS", "CHANGED");
        if (!t)
                return log_oom();
        for (size_t c = 1; c <= 6; c++)
                (void) table_set_align(t, c, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                char span[FORMAT_BYTES_MAX], changed[FORMAT_TIMESTAMP_MAX];

                if ((r = table_add_cell(t, p[i].name)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu64, p[i].now.files)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu64, p[i].now.extents)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu64, p[i].now.discontinuities)) >= 0 &&
                    (r = table_add_cell(t, format_bytes(span, sizeof span, p[i].now.span))) >= 0 &&
                    (r = table_add_cellf(t, "%.1f", p[i].now.modeled_read_ms)) >= 0) {
                        if (p[i].before_usec == 0)
                                (void) ((r = table_add_cell(t, "-")) >= 0 && (r = table_add_cell(t, "-")) >= 0);
                        else if ((r = table_add_cellf(t, "%.1f", p[i].before.modeled_read_ms)) >= 0)
                                r = table_add_cell(t, format_timestamp(changed, sizeof changed, p[i].before_usec));
                }
        }
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                printf("\n%zu profile%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

static int read_extents(sd_bus_message *m, SvgExtent **ret, size_t *ret_n) {
        _cleanup_free_ SvgExtent *e = NULL;
        size_t n = 0, allocated = 0;
        SvgExtent x;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(utt)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(utt)", &x.file, &x.offset, &x.length)) > 0) {
                if (grow_array(&e, &allocated, n + 1, sizeof *e) < 0)
                        return -ENOMEM;
                e[n++] = x;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(e);
        *ret_n = n;
        return 0;
}

/* Writes the picture to f (and fsyncs it when it is a regular file); logs nothing. */
static int svg_write_to(FILE *f, bool regular, const char *name, uint64_t device, uint32_t n_files,
                        const SvgPanel *before, const SvgPanel *now) {
        int r;

        r = svg_write_layout(f, name, device, n_files, before, now);
        if (r >= 0 && fflush(f) != 0)
                r = negative_errno();
        if (r >= 0 && regular && fsync(fileno(f)) < 0)
                r = negative_errno();
        return r;
}

/* A path that is not there yet, or a regular file: written whole or not at all, into a temporary file
 * next to it that is renamed over it when complete. Anything else, a symbolic link included, is never
 * renamed over (a device node, a FIFO or /dev/stdout must stay what it is, and a link must not lead a
 * rename elsewhere): it is opened for writing and written into, as a shell redirection would, a regular
 * file at the end of a link truncated first. */
static int write_svg_file(const char *path, const char *name, uint64_t device, uint32_t n_files,
                          const SvgPanel *before, const SvgPanel *now) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct stat st;
        bool exists = true;
        mode_t mask;
        int fd, r;

        if (lstat(path, &st) < 0) {
                if (errno != ENOENT)
                        return log_error_errno(errno, "Failed to look at %s: %m", path);
                exists = false;
        } else if (!S_ISREG(st.st_mode)) {
                fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
                if (fd < 0)
                        return log_error_errno(errno, "Failed to open %s: %m", path);
                if (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)) {
                        r = log_error_errno(errno, "Failed to prepare %s for writing: %m", path);
                        (void) close(fd);
                        return r;
                }
                f = fdopen(fd, "w");
                if (!f) {
                        r = log_error_errno(errno, "Failed to open %s: %m", path);
                        (void) close(fd);
                        return r;
                }
                r = svg_write_to(f, S_ISREG(st.st_mode), name, device, n_files, before, now);
                if (r >= 0 && fclose(TAKE_PTR(f)) != 0)
                        r = negative_errno();
                if (r < 0)
                        return r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to write %s: %m", path);
                return 0;
        }

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                tmp = NULL;
                return log_oom();
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create %s: %m", tmp);

        /* mkostemp() creates 0600; give the picture the mode a plain fopen() would. */
        mask = umask(0);
        (void) umask(mask);
        (void) fchmod(fd, 0666 & ~mask);

        f = fdopen(fd, "w");
        if (!f) {
                r = log_error_errno(errno, "Failed to open %s: %m", tmp);
                (void) close(fd);
                goto fail;
        }

        r = svg_write_to(f, true, name, device, n_files, before, now);
        if (r < 0) {
                r = r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to write %s: %m", tmp);
                goto fail;
        }
        r = fclose(TAKE_PTR(f));
        if (r != 0) {
                r = log_error_errno(errno, "Failed to write %s: %m", tmp);
                goto fail;
        }

        /* RENAME_NOREPLACE when nothing was there: what appeared meanwhile is not replaced */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, exists ? 0 : RENAME_NOREPLACE) < 0) {
                r = log_error_errno(errno, "Failed to rename %s to %s: %m", tmp, path);
                goto fail;
        }
        return 0;

fail:
        (void) unlink(tmp);
        return r;
}

static int report_svg(sd_bus *bus, const char *command, const char *what, const ReportInfo *info) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ SvgExtent *before = NULL, *now = NULL;
        _cleanup_free_ char *before_sub = NULL, *now_sub = NULL;
        size_t n_before = 0, n_now = 0;
        uint64_t device;
        int r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetLayout", command, what, info->name, &reply, "s",
                        info->name);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "t", &device);
        if (r >= 0)
                r = read_extents(reply, &before, &n_before);
        if (r >= 0)
                r = read_extents(reply, &now, &n_now);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_parse_error(r);

        /* The numbers from Report for the subtitles; the "before" ones only if they belong to a layout. */
        if (asprintf(&now_sub, "%zu extents, %" PRIu64 " discontinuities, %.1f ms modeled", n_now,
                     info->now.discontinuities, info->now.modeled_read_ms) < 0)
                now_sub = NULL;
        if (info->before_usec > 0 && n_before > 0 &&
            asprintf(&before_sub, "%zu extents, %" PRIu64 " discontinuities, %.1f ms modeled", n_before,
                     info->before.discontinuities, info->before.modeled_read_ms) < 0)
                before_sub = NULL;
        else if (info->before_usec == 0 && n_before > 0 && asprintf(&before_sub, "%zu extents", n_before) < 0)
                before_sub = NULL;

        r = write_svg_file(arg_svg, info->name, device, (uint32_t) MIN(info->now.files, (uint64_t) UINT32_MAX),
                           &(SvgPanel) { "before", before_sub, "no 'before' layout recorded", before, n_before },
                           &(SvgPanel) { "after (now)", now_sub, "no layout data", now, n_now });
        if (r < 0)
                return r;

        if (arg_json == JSON_OFF)
                printf("Wrote %s.\n", arg_svg);
        return 0;
}

static int verb_report(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ ReportInfo *profiles = NULL;
        _cleanup_free_ char *what = NULL, *layout_what = NULL, *name = NULL;
        size_t n = 0, allocated = 0;
        ReportInfo p;
        int r;

        if (argc > 1 && !(name = arg_to_bus(argv[1])))
                return log_oom();

        if (arg_svg && !name) {
                log_error("--svg needs a profile NAME: 'report NAME --svg FILE'.");
                verb_usage_hint();
                return -EUSAGE;
        }

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (name && (asprintf(&what, "get the layout report of profile '%s'", name) < 0 ||
                     asprintf(&layout_what, "get the layout of profile '%s'", name) < 0))
                return log_oom();

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "Report", argv[0], what ?: "get the layout report", name,
                        &reply, "s", name ?: "");
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(s" QUALITY_TYPES QUALITY_TYPES "t)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(s" QUALITY_TYPES QUALITY_TYPES "t)", &p.name,
                                        QUALITY_ARGS(&p.now), QUALITY_ARGS(&p.before), &p.before_usec)) > 0) {
                if (grow_array(&profiles, &allocated, n + 1, sizeof *profiles) < 0)
                        return log_oom();
                profiles[n++] = p;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        if (arg_svg) {
                if (n == 0)
                        return log_error_errno(SYNTHETIC_ERRNO(ENOENT), "No profile named '%s'.", name);
                r = report_svg(bus, argv[0], layout_what, &profiles[0]);
                if (r < 0 || arg_json == JSON_OFF)
                        return r;
        }

        return arg_json != JSON_OFF ? report_json(profiles, n) : report_human(profiles, n);
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
               "  plan [MOUNT...]      Show what an optimization would move, and the layout\n"
               "                       quality expected after it\n"
               "  optimize [MOUNT...]  Lay each profile's files out contiguously, and wait\n"
               "                       for it to finish\n"
               "  optimize --when-idle [MOUNT...]\n"
               "                       Queue it to start by itself when the machine is idle\n"
               "  cancel               Stop the running optimization, drop a queued one\n"
               "  report [NAME]        Show the layout quality of profiles\n"
               "  report NAME --svg=FILE\n"
               "                       Draw the profile's layout before and after the last\n"
               "                       optimization into an SVG picture\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help\n"
               "     --version         Show package version\n"
               "     --json=pretty|short|off\n"
               "                       Generate JSON output (plain --json: pretty on a terminal,\n"
               "                       short otherwise)\n"
               "     --no-legend       Do not show headers and footers\n"
               "  -a --all             With 'forget': delete every profile\n"
               "     --dry-run         With 'optimize': only show the plan, move nothing\n"
               "     --no-block        With 'optimize': start it and return at once\n"
               "     --when-idle       With 'optimize': queue it until the machine is idle\n"
               "     --svg=FILE        With 'report NAME': write the layout picture to FILE\n"
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
                ARG_DRY_RUN,
                ARG_NO_BLOCK,
                ARG_WHEN_IDLE,
                ARG_SVG,
        };
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h'           },
                { "version",   no_argument,       NULL, ARG_VERSION   },
                { "json",      optional_argument, NULL, ARG_JSON      },
                { "no-legend", no_argument,       NULL, ARG_NO_LEGEND },
                { "all",       no_argument,       NULL, 'a'           },
                { "dry-run",   no_argument,       NULL, ARG_DRY_RUN   },
                { "no-block",  no_argument,       NULL, ARG_NO_BLOCK  },
                { "when-idle", no_argument,       NULL, ARG_WHEN_IDLE },
                { "svg",       required_argument, NULL, ARG_SVG       },
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
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case ARG_NO_BLOCK:
                        arg_no_block = true;
                        break;
                case ARG_WHEN_IDLE:
                        arg_when_idle = true;
                        break;
                case ARG_SVG:
                        if (isempty(optarg)) {
                                log_error("--svg= needs a file name.");
                                verb_usage_hint();
                                return -EUSAGE;
                        }
                        arg_svg = optarg;
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
        if ((arg_dry_run || arg_no_block || arg_when_idle) && !(optind < argc && streq(argv[optind], "optimize"))) {
                log_error("--%s is only valid with 'optimize'.",
                          arg_dry_run ? "dry-run" : arg_no_block ? "no-block" : "when-idle");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (arg_dry_run && arg_when_idle) {
                log_error("--dry-run and --when-idle cannot be combined: --dry-run starts nothing.");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (arg_svg && !(optind < argc && streq(argv[optind], "report"))) {
                log_error("--svg is only valid with 'report'.");
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
                { "plan",     VERB_ANY, VERB_ANY, 0,     verb_plan     },
                { "optimize", VERB_ANY, VERB_ANY, 0,     verb_optimize },
                { "cancel",   VERB_ANY, 1, 0,            verb_cancel   },
                { "report",   VERB_ANY, 2, 0,            verb_report   },
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

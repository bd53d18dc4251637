/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl status: the daemon's properties as a "Key: value" block or one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "seeklessctl.h"

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
                if (GREEDY_REALLOC(info->queued_mounts, info->allocated_queued_mounts, info->n_queued_mounts + 1) < 0)
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
                if (GREEDY_REALLOC(info->filesystems, info->allocated_filesystems, info->n_filesystems + 1) < 0)
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

int verb_status(int argc, char *argv[], void *userdata) {
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl's side of the bus: connecting, calling the daemon without activating it, one line for each
 * way a call can fail, and the arguments as the daemon wants them. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "common/escape.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/seeklessctl.h"
#include "cli/verbs.h"

int acquire_bus(sd_bus **ret) {
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

int bus_read_array(sd_bus_message *m, bool variant, const char *contents,
                   int (*element)(sd_bus_message *m, void *userdata), void *userdata) {
        char signature[64];
        int r;

        if ((size_t) snprintf(signature, sizeof signature, "a%s", contents) >= sizeof signature)
                return -EINVAL;
        if (variant && (r = sd_bus_message_enter_container(m, 'v', signature)) < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', contents);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_at_end(m, false)) == 0)
                if ((r = element(m, userdata)) < 0)
                        return r;
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;
        return variant ? sd_bus_message_exit_container(m) : 0;
}

int log_parse_error(int r) {
        if (r == -ENOMEM)
                return log_oom();
        return log_error_errno(r, "Failed to parse the daemon's reply: %m");
}

/* Calls member on the daemon's object without activating the service: if seeklessd is not running we want
 * to say so, not start it. types and the arguments after it are the call's input, as for
 * sd_bus_message_append(). */
static int call_daemonv(sd_bus *bus, const char *interface, const char *member, const char *command,
                        const char *what, const char *profile, bool optional, sd_bus_message **ret_reply,
                        const char *types, va_list ap) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SEEKLESS_BUS_NAME, SEEKLESS_BUS_PATH, interface, member);
        if (r < 0)
                return log_error_errno(r, "Failed to create bus message: %m");

        r = sd_bus_message_set_auto_start(m, false);
        if (r < 0)
                return log_error_errno(r, "Failed to disable service activation: %m");

        if (types) {
                r = sd_bus_message_appendv(m, types, ap);
                if (r < 0)
                        return log_error_errno(r, "Failed to append arguments: %m");
        }

        r = sd_bus_call(bus, m, 0, &error, ret_reply);
        if (r < 0 && optional && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                *ret_reply = NULL;
                return 0;
        }
        if (r < 0)
                return log_bus_call_error(&error, r, command, what, profile);
        return 0;
}

int call_daemon(sd_bus *bus, const char *interface, const char *member, const char *command,
                       const char *what, const char *profile, sd_bus_message **ret_reply,
                       const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_daemonv(bus, interface, member, command, what, profile, false, ret_reply, types, ap);
        va_end(ap);
        return r;
}

int call_daemon_optional(sd_bus *bus, const char *interface, const char *member, const char *command,
                         const char *what, const char *profile, sd_bus_message **ret_reply,
                         const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_daemonv(bus, interface, member, command, what, profile, true, ret_reply, types, ap);
        va_end(ap);
        return r;
}

/* A NAME or mount point from the command line in the escaped form paths have on the bus (escape.h): as it
 * is when it reads as one, so that what profiles or plan shows can be pasted back; escaped when it holds
 * bytes an escaped form never has (a name typed raw, e.g. $'/tmp/\xff'). */
char *arg_to_bus(const char *arg) {
        _cleanup_free_ char *raw = NULL;

        if (escape_is_clean(arg) && path_unescape(arg, &raw) >= 0)
                return strdup(arg);
        return path_escape(arg);
}

int log_oom(void) {
        return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory.");
}

/* The mount points given, for the daemon: a relative one made absolute here (the daemon matches them
 * against its mount points, and normalises "//", "/./" and a trailing "/"). */
int mounts_from_args(char **args, const char *command, char ***ret) {
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
int call_with_mounts(sd_bus *bus, const char *member, const char *command, const char *what,
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

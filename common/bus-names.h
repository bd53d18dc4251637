/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

#define SEEKLESS_BUS_NAME "org.seekless.Seekless1"
#define SEEKLESS_BUS_PATH "/org/seekless/Seekless1"
#define SEEKLESS_BUS_INTERFACE "org.seekless.Seekless1.Manager"

/* Domain errors. Each maps to an errno both ways (see bus-errors.c). Standard D-Bus errors are used where
 * they fit: org.freedesktop.DBus.Error.InvalidArgs for malformed arguments, .AccessDenied for callers
 * that are not root. */
#define SEEKLESS_ERROR_NO_SUCH_PROFILE "org.seekless.Seekless1.Error.NoSuchProfile"
#define SEEKLESS_ERROR_DATABASE "org.seekless.Seekless1.Error.Database"
#define SEEKLESS_ERROR_BUSY "org.seekless.Seekless1.Error.Busy"
#define SEEKLESS_ERROR_NOT_WATCHED "org.seekless.Seekless1.Error.NotWatched"
#define SEEKLESS_ERROR_NO_SUCH_RUN "org.seekless.Seekless1.Error.NoSuchRun"
#define SEEKLESS_ERROR_PREFETCH_OFF "org.seekless.Seekless1.Error.PrefetchOff"

extern const sd_bus_error_map seekless_bus_error_map[];

/* Register the map with sd-bus so error names and errnos convert both ways. Call once per process. */
int seekless_bus_errors_register(void);

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "common/bus-names.h"

const sd_bus_error_map seekless_bus_error_map[] = {
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_NO_SUCH_PROFILE, ENOENT),
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_DATABASE, EIO),
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_BUSY, EBUSY),
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_NOT_WATCHED, ENODEV),
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_NO_SUCH_RUN, ESRCH),
        SD_BUS_ERROR_MAP(SEEKLESS_ERROR_PREFETCH_OFF, EAGAIN),
        SD_BUS_ERROR_MAP_END,
};

int seekless_bus_errors_register(void) {
        return sd_bus_error_add_map(seekless_bus_error_map);
}

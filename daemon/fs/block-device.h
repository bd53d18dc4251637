/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

/* The block device dev, opened O_RDONLY (never written, never O_EXCL: it is mounted): its node is found by
 * the name devtmpfs gave it (sysfs's uevent, no /dev/block links needed), checked to be that device. The
 * page recorder reads through it to learn the device's page events, the prefetch warms ext4's metadata
 * through it. Returns the fd or a negative errno (-ENODEV: the node is another device). */
int block_device_open(dev_t dev);

/* host_state.c - the state of this machine that availability schedules are
 * judged against: time of day, idleness, battery. Linux sources: the
 * realtime clock, /proc/stat, /sys/class/power_supply. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "synor/registry.h"

static int read_cpu(unsigned long long *busy, unsigned long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4)
        return -1;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *busy = *total - v[3] - v[4];
    return 0;
}

static int read_line(const char *dir, const char *name, char *buf, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "/sys/class/power_supply/%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int synor_host_state_read(synor_host_state *out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_host_state_read: out is NULL");
    synor_host_state s = {.utc_hour = 0, .host_idle = 0, .charging = 1, .battery_pct = 100};
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        s.utc_hour = (unsigned)tm.tm_hour;

    unsigned long long b0, t0, b1, t1;
    if (read_cpu(&b0, &t0) == 0) {
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
        if (read_cpu(&b1, &t1) == 0 && t1 > t0)
            s.host_idle = (double)(b1 - b0) / (double)(t1 - t0) < 0.10;
    }

    DIR *dir = opendir("/sys/class/power_supply");
    if (dir) {
        struct dirent *e;
        int on_ac = 0, have_battery = 0, charging = 0;
        unsigned pct = 100;
        char buf[64];
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            if (read_line(e->d_name, "type", buf, sizeof buf))
                continue;
            if (strcmp(buf, "Mains") == 0 && read_line(e->d_name, "online", buf, sizeof buf) == 0)
                on_ac |= strcmp(buf, "1") == 0;
            if (strcmp(buf, "Battery") == 0) {
                have_battery = 1;
                if (read_line(e->d_name, "capacity", buf, sizeof buf) == 0) {
                    unsigned v;
                    if (sscanf(buf, "%u", &v) == 1 && v <= 100)
                        pct = v;
                }
                if (read_line(e->d_name, "status", buf, sizeof buf) == 0)
                    charging |= strcmp(buf, "Charging") == 0 || strcmp(buf, "Full") == 0;
            }
        }
        closedir(dir);
        if (have_battery) {
            s.charging = on_ac || charging;
            s.battery_pct = pct;
        }
    }
    *out = s;
    return 0;
}

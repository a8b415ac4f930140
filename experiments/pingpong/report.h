/* Output of gamma-pingpong: a human table or CSV rows. */
#ifndef PP_REPORT_H
#define PP_REPORT_H

#include <stdbool.h>
#include <stdint.h>

/* Sorts v in place and returns its median. */
double pp_median(double *v, uint32_t n);
void pp_report_header(bool csv, const char *title, const char *columns);
void pp_report_row(bool csv, const char *test, uint32_t size, double value, const char *unit);
void pp_report_note(bool csv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

/* Output of gamma-pingpong. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double pp_median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void pp_report_header(bool csv, const char *title, const char *columns)
{
	if (csv)
		return;
	printf("# %s\n%s\n", title, columns);
	fflush(stdout);
}

void pp_report_row(bool csv, const char *test, uint32_t size, double value, const char *unit)
{
	if (csv)
		printf("%s,%u,%.3f,%s\n", test, size, value, unit);
	else if (value >= 1e5)
		printf("%10u  %12.0f\n", size, value);
	else
		printf("%10u  %12.2f\n", size, value);
	fflush(stdout);
}

void pp_report_note(bool csv, const char *fmt, ...)
{
	va_list ap;
	(void)csv;
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

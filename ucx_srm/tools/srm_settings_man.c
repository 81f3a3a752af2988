/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_settings_man TEMPLATE: copies the man page TEMPLATE to stdout with
 * its "@SETTINGS@" line replaced by every UCX_SRM_* setting of the config
 * tables (name, default, what values it takes, its documentation), so
 * that ucx-srm(7) says what the code reads. Run by make; not installed.
 */
#define _GNU_SOURCE /* strchrnul */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucx_srm/uct/srm_uct.h>

#include <stdio.h>
#include <string.h>

#define SETTINGS_MARK "@SETTINGS@"

/* Text made safe for groff: backslashes and minus signs escaped, and no
 * line that starts with a control character. */
static void man_span(FILE *out, const char *text, size_t length)
{
    const char *end = text + length;
    int line_start  = 1;

    for (; text < end; ++text) {
        if (line_start && ((*text == '.') || (*text == '\''))) {
            fputs("\\&", out);
        }
        switch (*text) {
        case '\\': fputs("\\e", out); break;
        case '-':  fputs("\\-", out); break;
        default:   fputc(*text, out); break;
        }
        line_start = (*text == '\n');
    }
}

static void man_text(FILE *out, const char *text)
{
    man_span(out, text, strlen(text));
}

/*
 * A setting's documentation as the tables write it for a terminal: lines
 * of text, and lists of values (" name - what", continued by deeper
 * indented lines), which become tagged paragraphs set close together.
 */
static void man_doc(FILE *out, const char *doc)
{
    const char *line, *end, *dash;
    int in_list = 0;

    for (line = doc; *line != '\0'; line = (*end == '\0') ? end : end + 1) {
        end  = strchrnul(line, '\n');
        dash = strstr(line, " - ");
        if ((line[0] == ' ') && (line[1] != ' ') && (dash != NULL) &&
            (dash < end)) {
            fputs(in_list ? ".TP\n.B " : ".PD 0\n.TP 9\n.B ", out);
            man_span(out, line + 1, strcspn(line + 1, " "));
            fputs("\n", out);
            line   = dash + 3;
            in_list = 1;
        } else if (in_list && (line[0] != ' ')) {
            fputs(".PD\n.PP\n", out);
            in_list = 0;
        }
        line += strspn(line, " ");
        man_span(out, line, end - line);
        fputs("\n", out);
    }
    if (in_list) {
        fputs(".PD\n.PP\n", out);
    }
}

/* Walks a table; embedded tables are followed only where they are srm's
 * own (UCX's generic md and iface settings are UCX's to document). */
static int man_settings(FILE *out, const ucs_config_field_t *fields)
{
    const ucs_config_field_t *field;
    char values[256];
    int count = 0;

    for (field = fields; field->name != NULL; ++field) {
        if (field->name[0] == '\0') {
            if (field->parser.arg == srm_node_config_table) {
                count += man_settings(out, srm_node_config_table);
            }
            continue;
        }
        if (field->doc == NULL) {
            fprintf(stderr, "srm_settings_man: %s%s has no documentation\n",
                    SRM_CONFIG_PREFIX, field->name);
            return -1;
        }
        values[0] = '\0';
        field->parser.help(values, sizeof(values), field->parser.arg);

        fputs(".PP\n.B UCX_", out);
        man_text(out, SRM_CONFIG_PREFIX);
        man_text(out, field->name);
        fputs("\n.RS\n", out);
        man_doc(out, field->doc);
        fputs(".br\nDefault: \\fB", out);
        man_text(out, (field->dfl_value[0] != '\0') ? field->dfl_value :
                                                      "(empty)");
        fputs("\\fR; takes ", out);
        man_text(out, values);
        fputs(".\n.RE\n", out);
        ++count;
    }
    return count;
}

static int man_all_settings(FILE *out)
{
    int counts[3];

    fputs(".SS How a process reaches its node agent\n"
          "Read by every process that opens srm, and by srmd itself.\n", out);
    counts[0] = man_settings(out, uct_srm_md_config_table);
    fputs(".SS What each process does\n"
          "Read by every process when it opens an srm interface.\n", out);
    counts[1] = man_settings(out, uct_srm_iface_config_table);
    fputs(".SS What the node agent does\n"
          "Read by srmd when it starts. An agent started on demand has them\n"
          "from the process that started it; a running agent keeps its\n"
          "own (\\fBsrmd \\-\\-config\\fR and \\fBsrmctl status\\fR show them).\n",
          out);
    counts[2] = man_settings(out, srm_agent_config_table);
    return ((counts[0] < 0) || (counts[1] < 0) || (counts[2] < 0)) ? -1 : 0;
}

int main(int argc, char **argv)
{
    char line[1024];
    int found = 0;
    FILE *template;

    if (argc != 2) {
        fprintf(stderr, "usage: srm_settings_man TEMPLATE > PAGE\n");
        return 2;
    }
    template = fopen(argv[1], "r");
    if (template == NULL) {
        fprintf(stderr, "srm_settings_man: cannot open %s: %m\n", argv[1]);
        return 1;
    }
    while (fgets(line, sizeof(line), template) != NULL) {
        if (strncmp(line, SETTINGS_MARK, strlen(SETTINGS_MARK)) != 0) {
            fputs(line, stdout);
        } else if (man_all_settings(stdout) != 0) {
            fclose(template);
            return 1;
        } else {
            found = 1;
        }
    }
    fclose(template);
    if (!found) {
        fprintf(stderr, "srm_settings_man: %s has no %s line\n", argv[1],
                SETTINGS_MARK);
        return 1;
    }
    return 0;
}

/* version.h - the tool's name and version, as the report records them. */
#ifndef NC_VERSION_H
#define NC_VERSION_H

#define NC_TOOL_NAME "normcmp"
#define NC_VERSION "0.1.0"

#endif

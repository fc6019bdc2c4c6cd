/* netclient_int.h - what the files of src/netclient/ share. */
#ifndef SYNOR_NETCLIENT_INT_H
#define SYNOR_NETCLIENT_INT_H

#define SYNOR__NETCLIENT_MAGIC 0x6e657463u /* "netc" */

#endif

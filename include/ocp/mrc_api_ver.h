/*
 * mrc_api_ver.h - version numbers of the OCP MRC application API (mrc.h), as implemented by
 * mrc's lib_mrc.so. Macro names and values follow the OCP MRC 1.0 API so that programs
 * written for it compile unchanged.
 *
 * A version is MAJOR.MINOR.SUBMINOR packed into 32 bits: MAJOR in bits 31..24, MINOR in
 * 23..16, SUBMINOR in 15..0. MAJOR changes break the API/ABI, MINOR adds compatible features,
 * SUBMINOR fixes without API change.
 *
 * A program may define MRC_API_VER_USED before including mrc.h to select the API version it
 * was written for (MRC_API_VER_LATEST means "the newest this header knows"). Declarations
 * introduced after that version are then hidden.
 */
#ifndef _MRC_API_VER_H_
#define _MRC_API_VER_H_

#define MRC_API_VER_MAJOR_OFFSET        24
#define MRC_API_VER_MINOR_OFFSET        16
#define MRC_API_VER_SUBMINOR_OFFSET     0

#define MRC_API_VER(_major, _minor, _sub_minor) \
	(((_major) << MRC_API_VER_MAJOR_OFFSET) | \
	 ((_minor) << MRC_API_VER_MINOR_OFFSET) | \
	 ((_sub_minor)) << MRC_API_VER_SUBMINOR_OFFSET)

/* "Whatever the header's current version is." */
#define MRC_API_VER_LATEST              MRC_API_VER(0xFF, 0xFF, 0xFFFF)

#define MRC_API_CURRENT_VERSION         MRC_API_VER(1, 0, 1)
#define MRC_API_LAST_SUPPORTED_VERSION  MRC_API_VER(0, 0, 0)

#ifndef MRC_API_VER_USED
    #define MRC_API_VER_USED MRC_API_CURRENT_VERSION
#elif MRC_API_VER_USED == MRC_API_VER_LATEST
    #undef MRC_API_VER_USED
    #define MRC_API_VER_USED MRC_API_CURRENT_VERSION
#endif

#if MRC_API_VER_USED > MRC_API_CURRENT_VERSION
	#error "MRC_API_VER_USED is greater than MRC_API_CURRENT_VERSION"
#elif MRC_API_VER_USED < MRC_API_LAST_SUPPORTED_VERSION
    #error "MRC_API_VER_USED is less than MRC_API_LAST_SUPPORTED version"
#elif MRC_API_VER_USED == MRC_API_LAST_SUPPORTED_VERSION
    #warning "MRC_API_VER_USED is equal to MRC_API_LAST_SUPPORTED \
version, may become obsolete"
#endif

/*
 * The provider's own ("vendor") API surface has a separate version with the same encoding.
 * mrc has no vendor extensions; it reports 1.0.0.
 */
#define MRC_VENDOR_API_CURRENT_VERSION         MRC_API_VER(1, 0, 0)
#define MRC_VENDOR_API_LAST_SUPPORTED_VERSION  MRC_API_VER(0, 0, 0)

#ifndef MRC_VENDOR_API_VER_USED
    #define MRC_VENDOR_API_VER_USED MRC_VENDOR_API_CURRENT_VERSION
#elif MRC_VENDOR_API_VER_USED == MRC_API_VER_LATEST
    #undef MRC_VENDOR_API_VER_USED
    #define MRC_VENDOR_API_VER_USED MRC_VENDOR_API_CURRENT_VERSION
#endif

#if MRC_VENDOR_API_VER_USED > MRC_VENDOR_API_CURRENT_VERSION
    #error "MRC_VENDOR_API_VER_USED is greater than MRC_VENDOR_API_CURRENT_VERSION"
#elif MRC_VENDOR_API_VER_USED < MRC_VENDOR_API_LAST_SUPPORTED_VERSION
    #error "MRC_VENDOR_API_VER_USED is less than MRC_VENDOR_API_LAST_SUPPORTED_VERSION"
#elif MRC_VENDOR_API_VER_USED == MRC_VENDOR_API_LAST_SUPPORTED_VERSION
    #warning "MRC_VENDOR_API_VER_USED is equal to MRC_VENDOR_API_LAST_SUPPORTED_VERSION, \
may become obsolete"
#endif

#endif /* _MRC_API_VER_H_ */

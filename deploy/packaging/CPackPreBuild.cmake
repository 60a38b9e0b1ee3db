# CPACK_PRE_BUILD_SCRIPTS: runs after CPack staged the components and before it builds the
# .debs. Writes /usr/share/doc/PKG/changelog.Debian.gz beside each staged copyright file, with
# the version being packaged (which `cpack -D PICKET_PACKAGE_VERSION=...` may have changed, so
# it cannot be written at configure time).
set(version "${CPACK_PACKAGE_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH wins if set
file(GLOB_RECURSE copyrights "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/copyright")
list(FILTER copyrights INCLUDE REGEX "/share/doc/[^/]+/copyright$")
if(NOT copyrights)
    message(FATAL_ERROR "CPackPreBuild.cmake: no share/doc/*/copyright under "
                        "${CPACK_TEMPORARY_INSTALL_DIRECTORY}: the staging layout changed")
endif()
foreach(copyright IN LISTS copyrights)
    get_filename_component(docdir "${copyright}" DIRECTORY)
    get_filename_component(package "${docdir}" NAME)
    file(WRITE "${docdir}/changelog.Debian"
"picket (${version}) unstable; urgency=medium

  * ${package} ${CPACK_PACKAGE_VERSION}, built from the Picket source tree with CPack
    (deploy/packaging).

 -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}
")
    execute_process(COMMAND gzip -9nf "${docdir}/changelog.Debian" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "CPackPreBuild.cmake: gzip -9n ${docdir}/changelog.Debian failed: ${rc}")
    endif()
    file(CHMOD "${docdir}/changelog.Debian.gz" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ
         WORLD_READ)
endforeach()

# Debian packages picket-sensor, picket-manager and picketctl (CPack's DEB generator, one
# package per install component): `cmake --build build --target package`, or `cpack` in the
# build directory. What goes where and why: deploy/packaging/README.md.
# Included from the top-level CMakeLists.txt after the binaries' targets exist.

find_program(PICKET_HELP2MAN help2man)
find_program(PICKET_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT PICKET_HELP2MAN OR NOT PICKET_DPKG_SHLIBDEPS)
    message(STATUS "Packaging: help2man or dpkg-shlibdeps (dpkg-dev) not found: no package "
                   "target (deploy/install-deps.sh installs both)")
    return()
endif()

# Version of the packages: the project's, overridable at configure time
# (-DPICKET_PACKAGE_VERSION=0.2.0) or when packaging (cpack -D PICKET_PACKAGE_VERSION=0.2.0,
# read by CPackProjectConfig.cmake). The Debian revision is PICKET_PACKAGE_RELEASE.
set(PICKET_PACKAGE_VERSION "${PROJECT_VERSION}" CACHE STRING "Upstream version of the .debs")
set(PICKET_PACKAGE_RELEASE "1" CACHE STRING "Debian revision of the .debs")
if(NOT PICKET_PACKAGE_VERSION MATCHES "^[0-9][A-Za-z0-9.+~]*$")
    message(FATAL_ERROR "PICKET_PACKAGE_VERSION '${PICKET_PACKAGE_VERSION}' is not a Debian "
                        "upstream version (a digit, then letters, digits, '.', '+', '~')")
endif()
if(NOT PICKET_PACKAGE_RELEASE MATCHES "^[A-Za-z0-9.+~]+$")
    message(FATAL_ERROR "PICKET_PACKAGE_RELEASE '${PICKET_PACKAGE_RELEASE}' is not a Debian "
                        "revision (letters, digits, '.', '+', '~')")
endif()

set(_pkg_src ${CMAKE_CURRENT_LIST_DIR})
set(_pkg_bin ${CMAKE_BINARY_DIR}/packaging)
set(_deploy ${CMAKE_SOURCE_DIR}/deploy)

# Components: install-component name -> package name, binary, man section, man NAME line.
set(_pkg_components sensor manager ctl)
set(_pkg_sensor_package picket-sensor)
set(_pkg_sensor_binary picket-sensor)
set(_pkg_sensor_section 8)
set(_pkg_sensor_whatis "network intrusion detection and prevention sensor")
set(_pkg_manager_package picket-manager)
set(_pkg_manager_binary picket-manager)
set(_pkg_manager_section 8)
set(_pkg_manager_whatis "fleet manager for Picket sensors")
set(_pkg_ctl_package picketctl)
set(_pkg_ctl_binary picketctl)
set(_pkg_ctl_section 1)
set(_pkg_ctl_whatis "operate a Picket sensor fleet through its manager")

# Every packaging install rule is EXCLUDE_FROM_ALL: a plain `cmake --install` keeps installing
# only the binaries (into CMAKE_INSTALL_PREFIX/bin); CPack installs these components one by one.
set(_man_outputs)
foreach(comp IN LISTS _pkg_components)
    set(pkg ${_pkg_${comp}_package})
    set(bin ${_pkg_${comp}_binary})
    set(sec ${_pkg_${comp}_section})
    set(page ${_pkg_bin}/man/${bin}.${sec}.gz)
    # Man page from --help, at build time (the binary's own version, not the package's).
    add_custom_command(
        OUTPUT ${page}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${_pkg_bin}/man
        COMMAND sh ${_pkg_src}/manpage.sh ${PICKET_HELP2MAN} $<TARGET_FILE:${bin}> ${sec}
                ${PROJECT_VERSION} ${_pkg_${comp}_whatis} ${_pkg_src}/${bin}.h2m ${page}
        DEPENDS ${bin} ${_pkg_src}/manpage.sh ${_pkg_src}/${bin}.h2m
        COMMENT "help2man: ${bin}.${sec}.gz"
        VERBATIM)
    list(APPEND _man_outputs ${page})

    install(TARGETS ${bin} RUNTIME DESTINATION bin COMPONENT ${comp} EXCLUDE_FROM_ALL)
    install(FILES ${page} DESTINATION share/man/man${sec} COMPONENT ${comp} EXCLUDE_FROM_ALL)
    install(FILES ${_pkg_src}/copyright DESTINATION share/doc/${pkg}
            COMPONENT ${comp} EXCLUDE_FROM_ALL)
    install(FILES ${_pkg_src}/lintian-overrides DESTINATION share/lintian/overrides RENAME ${pkg}
            COMPONENT ${comp} EXCLUDE_FROM_ALL)
    # changelog.Debian.gz is written into the staging tree by CPackPreBuild.cmake, with the
    # version being packaged.

    string(TOUPPER ${comp} COMP)
    set(CPACK_DEBIAN_${COMP}_PACKAGE_NAME ${pkg})
    set(CPACK_DEBIAN_${COMP}_FILE_NAME DEB-DEFAULT)
    set(extra)
    foreach(script conffiles postinst prerm postrm)
        if(EXISTS ${_pkg_src}/${pkg}.${script})
            list(APPEND extra ${_pkg_src}/${pkg}.${script})
        endif()
    endforeach()
    # CPack takes control files by their base name: copy them as conffiles, postinst, ...
    set(ctl_dir ${_pkg_bin}/control/${pkg})
    file(REMOVE_RECURSE ${ctl_dir})
    set(control_files)
    foreach(f IN LISTS extra)
        get_filename_component(ext ${f} LAST_EXT)
        string(SUBSTRING ${ext} 1 -1 name)
        configure_file(${f} ${ctl_dir}/${name} COPYONLY)
        list(APPEND control_files ${ctl_dir}/${name})
    endforeach()
    set(CPACK_DEBIAN_${COMP}_PACKAGE_CONTROL_EXTRA ${control_files})
endforeach()
add_custom_target(picket-manpages ALL DEPENDS ${_man_outputs})

# systemd units: deploy/systemd's, with the binaries in /usr/bin instead of /usr/local/bin and
# a Documentation= line naming the man page (only here: systemd-analyze verify fails on a man
# page that is not installed, as on a host that installs the units by hand).
foreach(unit picket-manager.service picket-sensor@.service)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_deploy}/systemd/${unit})
    file(READ ${_deploy}/systemd/${unit} text)
    string(REPLACE "/usr/local/bin/" "/usr/bin/" text "${text}")
    string(REGEX MATCH "^[^@.]+" binary ${unit})
    string(REGEX REPLACE "(\nDescription=[^\n]*\n)" "\\1Documentation=man:${binary}(8)\n" text
           "${text}")
    if(NOT text MATCHES "\nDocumentation=man:${binary}\\(8\\)\n")
        message(FATAL_ERROR "deploy/systemd/${unit}: no Description= line to add Documentation= after")
    endif()
    string(PREPEND text "# Installed by the Debian package (deploy/packaging); change it with "
           "`systemctl edit`, not here.\n")
    file(CONFIGURE OUTPUT ${_pkg_bin}/systemd/${unit} CONTENT "${text}" @ONLY)
endforeach()
install(FILES ${_pkg_bin}/systemd/picket-manager.service DESTINATION /lib/systemd/system
        COMPONENT manager EXCLUDE_FROM_ALL)
install(FILES ${_pkg_bin}/systemd/picket-sensor@.service DESTINATION /lib/systemd/system
        COMPONENT sensor EXCLUDE_FROM_ALL)

# Configuration (conffiles, listed in PKG.conffiles) and examples.
install(FILES ${_deploy}/manager.yaml DESTINATION /etc/picket COMPONENT manager EXCLUDE_FROM_ALL)
install(FILES ${_deploy}/sensor.yaml DESTINATION /etc/picket COMPONENT sensor EXCLUDE_FROM_ALL)
install(FILES ${_deploy}/logrotate/picket-sensor DESTINATION /etc/logrotate.d
        COMPONENT sensor EXCLUDE_FROM_ALL)
install(FILES ${_deploy}/systemd/picket-sensor.env ${_deploy}/profile-ladder.yaml
        DESTINATION share/doc/picket-sensor/examples COMPONENT sensor EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/picketctl.bash-completion DESTINATION share/bash-completion/completions
        RENAME picketctl COMPONENT ctl EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME picket)
set(CPACK_PACKAGE_VENDOR "Picket developers")
set(CPACK_PACKAGE_VERSION ${PICKET_PACKAGE_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${PICKET_PACKAGE_RELEASE})
set(CPACK_PACKAGE_CONTACT "Picket maintainers <maintainers@users.noreply.a-seed-581fa478.example>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_pkg_components})  # never the unnamed component of the plain install
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends on shared libraries: dpkg-shlibdeps, per package
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # xz saves ~30% but triples the packaging time
# Hand-written Depends are only what the maintainer scripts run; dpkg-shlibdeps adds the rest.
set(CPACK_DEBIAN_SENSOR_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_MANAGER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_SENSOR_PACKAGE_RECOMMENDS "logrotate")
set(CPACK_DEBIAN_SENSOR_PACKAGE_SUGGESTS "picketctl")
set(CPACK_DEBIAN_MANAGER_PACKAGE_SUGGESTS "picketctl")
set(CPACK_DEBIAN_SENSOR_DESCRIPTION "Picket network intrusion detection and prevention sensor
picket-sensor captures packets (pcap, AF_PACKET, NFQUEUE, AF_PACKET inline)
or reads pcap files, reassembles TCP streams, parses HTTP, TLS and DNS, and
matches Suricata and Snort 3 rules, writing alerts to eve.json and fast.log.
In a fleet it runs the rule bundles its manager deploys.
.
This package holds the sensor, the systemd unit picket-sensor@IFACE.service
and its logrotate configuration.")
set(CPACK_DEBIAN_MANAGER_DESCRIPTION "Picket fleet manager for network IDS/IPS sensors
picket-manager keeps the rule bundles, deployments and run history of a fleet
of Picket sensors in SQLite, deploys bundles with canaries and rollbacks, and
exports the fleet's Prometheus metrics. Sensors and operators connect over
gRPC with mutual TLS.
.
This package holds the manager and the systemd unit picket-manager.service.")
set(CPACK_DEBIAN_CTL_DESCRIPTION "command-line client for the Picket fleet manager
picketctl lists sensors, pushes, compares and deploys rule bundles, rolls back,
reads run history and recent alerts, and manages rule sources and policy files
through a Picket manager. Its pki commands create the fleet's certificates.")

# At packaging time: cpack -D PICKET_PACKAGE_VERSION=..., and each package's changelog.
configure_file(${_pkg_src}/CPackProjectConfig.cmake.in ${_pkg_bin}/CPackProjectConfig.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${_pkg_bin}/CPackProjectConfig.cmake)
set(CPACK_PRE_BUILD_SCRIPTS ${_pkg_src}/CPackPreBuild.cmake)

include(CPack)

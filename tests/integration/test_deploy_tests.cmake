# The deployment (issue #6): the Helm chart and the container image. None of
# these needs the private broker or database.
#   test_deploy_chart   the chart's files, checked without helm (python3,
#                       PyYAML, jsonschema)
#   test_deploy_render  the chart rendered by helmrender (Go text/template +
#                       Sprig, Debian's packages) and the manifests checked;
#                       reaperd --check-config on the rendered reaper.yaml
#   test_deploy_image   the Dockerfile's runtime stage, run in a Debian 12
#                       debootstrap root (needs root and, the first time, the
#                       Debian mirror: about 30 s then, a few seconds after)
# Debian's python3, whose PyYAML and jsonschema scripts/install-deps installs
# (not whichever python3 comes first on PATH).
find_program(RP_DEPLOY_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RP_DEPLOY_PYTHON3)
  find_program(RP_DEPLOY_PYTHON3 python3 REQUIRED)
endif()
add_test(NAME test_deploy_chart
  COMMAND ${RP_DEPLOY_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/deploy/check_chart.py ${CMAKE_SOURCE_DIR})
set_tests_properties(test_deploy_chart PROPERTIES LABELS "unit;deploy" TIMEOUT 60)
# The two below run the built binaries as the image ships them: not the
# sanitizer build's (the image carries no sanitizer runtime).
if(NOT REAPER_SANITIZE AND NOT REAPER_FUZZ)
  add_test(NAME test_deploy_render
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/deploy/test_chart_render.sh)
  set_tests_properties(test_deploy_render PROPERTIES LABELS "unit;deploy" TIMEOUT 300
    ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHON3=${RP_DEPLOY_PYTHON3};RP_DEPLOY_WORK=${CMAKE_CURRENT_BINARY_DIR}/deploy-render;REAPERD=$<TARGET_FILE:reaperd>")
  add_test(NAME test_deploy_image
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/deploy/test_image_runtime.sh)
  set_tests_properties(test_deploy_image PROPERTIES LABELS "integration;deploy" TIMEOUT 600
    ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHON3=${RP_DEPLOY_PYTHON3};REAPERD=$<TARGET_FILE:reaperd>;REAPERCTL=$<TARGET_FILE:reaperctl>")
endif()
# The documentation stands alone (#16 item 6): every relative link of every
# Markdown file resolves inside the repository, the README's shape, LICENSE.
add_test(NAME test_docs
  COMMAND ${RP_DEPLOY_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/deploy/check_docs.py ${CMAKE_SOURCE_DIR})
set_tests_properties(test_docs PROPERTIES LABELS "unit;deploy" TIMEOUT 60)
# Issue #16: the image built by podman from the Dockerfile as it is and run
# against the private broker and database; skipped (exit 77, the reason
# printed) where podman cannot run. The first run makes the base images
# (debootstrap, about 2 min) and compiles reaper inside (a few minutes);
# later runs reuse both (podman's store and layer cache).
add_test(NAME test_deploy_podman_image
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/deploy/test_image_podman.sh)
set_tests_properties(test_deploy_podman_image PROPERTIES LABELS "integration;deploy;broker"
  TIMEOUT 1500 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# Issue #16: the chart rendered (helmrender) with http.listen :9100 and two
# replicas, its Deployment's pod played by podman kube play with the
# service-link variables of every rendered Service injected; each replica
# ready against the private services, the init container's --migrate, the
# probe port, the securityContext; skipped (exit 77) where podman cannot run.
add_test(NAME test_deploy_chart_pod
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/deploy/test_chart_pod.sh)
set_tests_properties(test_deploy_chart_pod PROPERTIES LABELS "integration;deploy;broker"
  TIMEOUT 1500 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHON3=${RP_DEPLOY_PYTHON3}")

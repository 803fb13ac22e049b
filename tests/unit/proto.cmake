# The control protocol codec: unit tests and the test vectors of proto/vectors.
rp_unit_test(test_proto SOURCES unit/test_proto.c LIBS reaper::proto)
target_include_directories(test_proto PRIVATE ${CMAKE_SOURCE_DIR}/proto)
rp_unit_test(test_proto_vectors SOURCES unit/test_proto_vectors.c LIBS reaper::proto)
target_compile_definitions(test_proto_vectors PRIVATE
  RP_VECTORS_DIR="${CMAKE_SOURCE_DIR}/proto/vectors")

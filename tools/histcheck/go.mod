module github.com/mpidict/mpidict/tools/histcheck

go 1.19

require github.com/anishathalye/porcupine v1.3.1

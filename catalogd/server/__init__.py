"""The daemon: Thrift handler and server, HTTP endpoints, start-up and shutdown."""

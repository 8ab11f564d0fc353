"""Transport layer shared by the daemon and the host runtime.

Local endpoint naming and the per-user runtime directory (`endpoints`), MCP sessions over
Unix domain sockets (`sockets`), and the one JSON serialization path (`jsonwire`).
"""

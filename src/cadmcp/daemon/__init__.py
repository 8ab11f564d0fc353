"""The cadmcp daemon: the one MCP server an AI client talks to.

It discovers host processes, keeps their catalogs, searches them and passes calls through.
Keep imports here light: the daemon starts once per AI client.
"""

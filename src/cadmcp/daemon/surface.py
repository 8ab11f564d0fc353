"""The daemon's fixed tool surface: definitions written for agents.

Every capability of every host is reached through these few tools; the list never changes
(`listChanged` is false), so an agent's context stays small however many hosts run.
"""

from __future__ import annotations

from typing import Any

SEARCH_DYNAMIC = "search_dynamic"
INVOKE_DYNAMIC = "invoke_dynamic"
LIST_HOST_INSTANCES = "list_host_instances"
LAUNCH_HOST = "launch_host"
READ_FILE_INFO = "read_file_info"
LIST_MACHINES = "list_machines"

MAX_LIMIT = 32
DEFAULT_LIMIT = 12
MAX_READS = 16

_KINDS = ["tool", "resource", "resource_template"]

TOOLS: list[dict[str, Any]] = [
    {
        "name": SEARCH_DYNAMIC,
        "title": "Search host capabilities",
        "description": (
            "Call this first. Searches the tools, resources and resource templates of every running "
            "CAD/BIM host (DXF drawings, IFC models, Revit, AutoCAD...) and answers ranked items, each "
            "with an opaque `id` to pass to invoke_dynamic, its host (hostApp, version, hostInstanceId, "
            "and the open `document` when the host tells), a short description, requiredArgs and argsHint; "
            "`why` says what put an item first among twins (the same capability on several hosts) or made "
            "a general-purpose tool the answer. Write the query as you would ask a colleague "
            "('count walls per storey', 'undo', 'screenshot of the plan'); an empty query lists everything. "
            "Use detail='schema' to get each tool's full inputSchema before calling it. Ids stay valid while "
            "the capability is unchanged; if invoke_dynamic says an id is stale, search again."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do or read, in plain words."},
                "hostInstanceId": {
                    "type": "string",
                    "description": "Only this host instance (from list_host_instances or an earlier result).",
                },
                "machineId": {
                    "type": "string",
                    "description": "Only hosts on this machine (an id or name from list_machines).",
                },
                "kinds": {
                    "type": "array",
                    "items": {"type": "string", "enum": _KINDS},
                    "description": "Only these kinds of capability.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": f"How many items (1-{MAX_LIMIT}).",
                },
                "detail": {
                    "type": "string",
                    "enum": ["summary", "schema"],
                    "default": "summary",
                    "description": "'schema' adds each tool's inputSchema.",
                },
            },
        },
    },
    {
        "name": INVOKE_DYNAMIC,
        "title": "Invoke a host capability",
        "description": (
            "Runs a capability found with search_dynamic. Pass `id` (from search_dynamic) and `arguments` "
            "(the tool's arguments, or a resource template's {params}); the host's own result comes back "
            "unchanged. To read several resources at once pass `reads=[{id, arguments?}, ...]` (at most "
            f"{MAX_READS}, resources and templates only) instead of `id`. Calls that change a model must not "
            "run in parallel against the same host: wait for one to finish before the next. If the answer is "
            "an error of type 'stale', nothing ran: search again and use the new id. If the host asks for "
            "input (input_required), answer it and retry with the same id and arguments. On clients that "
            "support MCP tasks, a call still running after a few seconds continues as a task."
        ),
        "execution": {"taskSupport": "optional"},
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "A capability id from search_dynamic."},
                "arguments": {"type": "object", "description": "Arguments for the tool or template."},
                "reads": {
                    "type": "array",
                    "maxItems": MAX_READS,
                    "description": "Several resource/template reads in one call (instead of id).",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}, "arguments": {"type": "object"}},
                        "required": ["id"],
                    },
                },
            },
        },
    },
    {
        "name": LIST_HOST_INSTANCES,
        "title": "List running hosts",
        "description": (
            "Lists the CAD/BIM host instances the daemon is connected to (hostApp, version, PID, "
            "hostInstanceId, number of capabilities) and the endpoints it discovered but could not use, "
            "with the reason. Use it to see which applications are running or to pick a hostInstanceId "
            "for search_dynamic."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "machineId": {
                    "type": "string",
                    "description": "Only hosts on this machine (an id or name from list_machines).",
                }
            },
        },
    },
    {
        "name": LAUNCH_HOST,
        "title": "Start a CAD/BIM host",
        "description": (
            "Starts a host application and waits until the daemon is connected to it, so its tools are "
            "searchable right away. Pass filePath alone to open a drawing or model with the host for its "
            "extension (.dxf -> DXF, .ifc -> IFC), or hostApp (DXF, IFC, Demo or a configured host) with an "
            "optional version and filePath. Answers pid, hostApp, version, hostInstanceId, "
            "bridgeConnected, phase and documents (it waits while the host opens its documents, and says "
            "so if it is still loading at the timeout); a document that did not open is an error "
            "(document_not_opened) naming why, what the host opens and the fix. A file already open in a "
            "running host answers that host (alreadyOpen) unless newInstance asks for a second copy. "
            "The host stops when the daemon exits unless detach is true. "
            "restartHostInstanceId restarts a host that is stuck (host_busy) or stopped answering: it is "
            "stopped and started again with its saved documents; the answer lists unsaved changes lost."
        ),
        "execution": {"taskSupport": "optional"},
        "inputSchema": {
            "type": "object",
            "properties": {
                "hostApp": {"type": "string", "description": "Which host to start (DXF, IFC, Demo, ...)."},
                "version": {"type": "string", "description": "Host version, when several are configured."},
                "filePath": {"type": "string", "description": "A drawing or model to open (absolute path)."},
                "timeoutSeconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": 3600,
                    "description": "How long to wait for the host to connect (default 120).",
                },
                "detach": {
                    "type": "boolean",
                    "default": False,
                    "description": "Keep the host running after the daemon exits.",
                },
                "newInstance": {
                    "type": "boolean",
                    "default": False,
                    "description": "Start another host even if filePath is already open in one (a second "
                    "copy; by default that host is answered instead).",
                },
                "restartHostInstanceId": {
                    "type": "string",
                    "description": "Restart this stuck host (from a host_busy error or list_host_instances) "
                    "instead of starting a new one.",
                },
                "machineId": {
                    "type": "string",
                    "description": "Start it on this machine (from list_machines), with that machine's "
                    "launch configuration; filePath is a path there.",
                },
            },
        },
    },
    {
        "name": READ_FILE_INFO,
        "title": "Read CAD/BIM file metadata",
        "description": (
            "Reads metadata of a CAD/BIM file on disk without opening it in any application: Revit "
            "(.rvt/.rfa/.rte/.rft: version, worksharing, central model, links), DWG (release), DXF "
            "(version, units, layers, blocks, entity counts) and IFC (schema, header, entity counts). "
            "Use it to decide which host and version to launch. detail='full' lists everything found."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "filePath": {"type": "string", "description": "Absolute path of the file."},
                "detail": {
                    "type": "string",
                    "enum": ["summary", "full"],
                    "default": "summary",
                    "description": "'summary' stays small; 'full' lists every layer, class and stream.",
                },
            },
            "required": ["filePath"],
        },
    },
    {
        "name": LIST_MACHINES,
        "title": "List machines",
        "description": (
            "Lists the workstations this daemon reaches: this one, and through a NATS gateway the other "
            "machines of your space, each with machineId, name, online/lastSeen, connectedHosts, hostApps "
            "and latencyMs. Their hosts are searched and invoked like local ones; pass machineId to "
            "search_dynamic, list_host_instances or launch_host to pick a machine. The gateway object says "
            "whether the gateway is configured and connected, with a typed error when it is not."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    },
]

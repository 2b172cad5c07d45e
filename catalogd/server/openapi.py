"""The OpenAPI document of the REST API (served at /v3/openapi.json)."""

from __future__ import annotations

from typing import Any

from catalogd import __version__

_ERROR = {
    "type": "object",
    "properties": {"error": {"type": "object", "properties": {
        "kind": {"type": "string", "example": "invalid-argument"},
        "message": {"type": "string"},
    }}},
}

_RUN = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "table": {"type": "string", "example": "main.sales.daily"},
        "trigger": {"type": "string", "enum": ["schedule", "catch-up", "initial", "manual", "api", "continuous"]},
        "status": {"type": "string", "enum": ["PENDING", "RUNNING", "SUCCEEDED", "FAILED"]},
        "scheduleTime": {"type": "string", "nullable": True, "example": "2024-03-02 00:00:00+00:00"},
        "partition": {"type": "object", "additionalProperties": {"type": "string"}, "example": {"ds": "2024-03-01"}},
        "submitted": {"type": "number", "description": "seconds since the epoch"},
        "started": {"type": "number", "nullable": True},
        "ended": {"type": "number", "nullable": True},
        "error": {"type": "string", "nullable": True},
        "rows": {"type": "integer", "nullable": True, "description": "rows written"},
        "applicationId": {"type": "string", "nullable": True, "description": "the Spark application"},
        "inputFiles": {"type": "integer", "nullable": True, "description": "files read after partition pruning"},
        "sourcePartitions": {"type": "array", "items": {"type": "string"}},
        "phase": {"type": "string", "nullable": True, "description": "starting, planning, writing, committing"},
        "fired": {"type": "number", "nullable": True, "description": "the scheduler's fire time"},
    },
}

_JOB = {
    "type": "object",
    "required": ["jobId", "status", "clusterInfo", "runs"],
    "properties": {
        "jobId": {"type": "string"},
        "status": {"type": "string", "enum": ["PENDING", "RUNNING", "SUCCEEDED", "FAILED"],
                   "description": "SUCCEEDED when every run did; FAILED when all ended and one failed"},
        "error": {"type": "string", "nullable": True},
        "clusterInfo": {"type": "object", "additionalProperties": {"type": "string"},
                        "example": {"master": "local[2]", "deployMode": "client"}},
        "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RefreshRun"}},
    },
}

_ERRORS = {
    "400": {"description": "bad request (unknown field, bad time, bad partition)", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
    "404": {"description": "no such dynamic table or job", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
    "503": {"description": "the metastore is unavailable", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "catalogd REST API",
        "version": __version__,
        "description": "Refresh dynamic tables from workflow schedulers (FLIP-435's gateway API).",
    },
    "paths": {
        "/v3/dynamic-tables/refresh": {"post": {
            "summary": "Refresh dynamic tables now",
            "description": "Starts one refresh per table; a refresh already running for the same table and "
                           "partition is joined, not repeated. Works while a table is suspended. With "
                           "scheduleTime, a table with partition.fields.<col>.date-formatter refreshes only "
                           "the partition format(scheduleTime - freshness).",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object",
                "required": ["tables"],
                "properties": {
                    "tables": {"type": "array", "items": {"type": "string"}, "example": ["main.sales.daily"]},
                    "scheduleTime": {"type": "string", "example": "2024-03-02 00:00:00",
                                     "description": "dynamic-tables.time-zone unless it has an offset"},
                    "partition": {"type": "object", "additionalProperties": {"type": "string"},
                                  "description": "refresh exactly this partition"},
                    "configuration": {"type": "object", "additionalProperties": {"type": "string"},
                                      "description": "extra Spark settings for the job"},
                },
            }}}},
            "responses": {"200": {"description": "the job", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/RefreshJob"}}}}, **_ERRORS},
        }},
        "/v3/dynamic-tables/refresh/{jobId}": {"get": {
            "summary": "A refresh job's status",
            "parameters": [{"name": "jobId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "the job", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/RefreshJob"}}}}, **_ERRORS},
        }},
    },
    "components": {"schemas": {"RefreshJob": _JOB, "RefreshRun": _RUN, "Error": _ERROR}},
}

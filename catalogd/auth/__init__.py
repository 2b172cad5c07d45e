"""Who may do what: principals and their tokens, roles per catalog, the operation -> role tables, the audit log.

- ``model``: ``Role``, ``Principal``, ``Authority`` (authenticate a token, check a role, job tokens)
- ``operations``: the role each Thrift RPC, REST route and HMS method kind needs
- ``audit``: ``AuditLog``, one JSON line per write and per denial, rotated by size
"""

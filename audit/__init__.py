"""The audit log: who approved or saw a host key change, changed a credential, started a destructive run,
created or revoked an API token, or changed a team's members. Owners read it at /audit/."""

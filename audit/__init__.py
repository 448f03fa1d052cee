"""The audit log: who approved or saw a host key change, which run or connection test a changed host key
stopped, who changed a credential, started a destructive run, created or revoked an API token, invited someone
or changed a team's members. Owners read it at /audit/."""

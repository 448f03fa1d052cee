"""The benchweb domain, one module per concept: teams own hosts (with credentials), disks, profiles, schedules,
runs and alert channels; results are the narrow tables the charts read. Everything is importable from jobs.models."""

from jobs.models.alerts import Alert, AlertRule
from jobs.models.changes import Annotation, ChangePoint
from jobs.models.channels import AlertChannel, Delivery
from jobs.models.disks import SPEC_FIELDS, Disk
from jobs.models.hosts import Credential, Host, site_validator
from jobs.models.names import name_taken
from jobs.models.profiles import Profile
from jobs.models.results import RunResult, RunResultDay, RunResultLatest
from jobs.models.runs import Run, RunSample, RunTally
from jobs.models.schedules import Schedule, ScheduleProfile
from jobs.models.sets import RunSet
from jobs.models.sharing import ShareLink
from jobs.models.teams import Invitation, InvitationQuerySet, Membership, Preferences, Team
from jobs.models.telemetry import HostSample

__all__ = [
    "SPEC_FIELDS",
    "Alert",
    "AlertChannel",
    "AlertRule",
    "Annotation",
    "ChangePoint",
    "Credential",
    "Delivery",
    "Disk",
    "Host",
    "HostSample",
    "Invitation",
    "InvitationQuerySet",
    "Membership",
    "Preferences",
    "Profile",
    "Run",
    "RunResult",
    "RunResultDay",
    "RunResultLatest",
    "RunSample",
    "RunSet",
    "RunTally",
    "Schedule",
    "ScheduleProfile",
    "ShareLink",
    "Team",
    "name_taken",
    "site_validator",
]  # fmt: skip

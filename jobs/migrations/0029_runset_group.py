from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0028_share_sweeps"),
    ]

    operations = [
        migrations.AlterField(
            model_name="runset",
            name="kind",
            field=models.CharField(
                choices=[("sweep", "Sweep"), ("sla", "Latency-target search"), ("group", "Synchronised group")],
                default="sweep",
                max_length=8,
            ),
        ),
        migrations.AlterField(
            model_name="runset",
            name="plan",
            field=models.JSONField(
                default=dict,
                help_text='A sweep: {"axes": [{"field", "values"}], "points": [{field: value}]}; an SLA search: its '
                'target; a group: {"disks": [disk id, ...]}, its members\' disks in order.',
            ),
        ),
    ]

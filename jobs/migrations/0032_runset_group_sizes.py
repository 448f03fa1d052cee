from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0031_run_clock_offset"),
    ]

    operations = [
        # "group_sizes" is longer than the 8 characters the kinds had.
        migrations.AlterField(
            model_name="runset",
            name="kind",
            field=models.CharField(
                choices=[
                    ("sweep", "Sweep"),
                    ("sla", "Latency-target search"),
                    ("group", "Synchronised group"),
                    ("group_sizes", "Group-size sweep"),
                ],
                default="sweep",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="runset",
            name="plan",
            field=models.JSONField(
                default=dict,
                help_text='A sweep: {"axes": [{"field", "values"}], "points": [{field: value}]}; an SLA search: its '
                'target; a group: {"disks": [disk id, ...]}, its members\' disks in order; a group-size sweep: '
                '{"disks": [...], "sizes": [1, 2, ...]}, a group of the first k disks for each size k.',
            ),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0029_runset_group"),
    ]

    operations = [
        migrations.AddField(
            model_name="schedule",
            name="as_group",
            field=models.BooleanField(
                default=False,
                help_text="Fire each profile as one synchronised group on all the targets, started at one instant, "
                "instead of one run a target (no stagger).",
            ),
        ),
    ]

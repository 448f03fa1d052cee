from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0030_schedule_as_group"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="clock_offset",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]

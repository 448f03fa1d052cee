# A webhook's URL, like an Apprise URL, is stored encrypted and shown masked (its user:password@ never shown back).

from django.db import migrations, models

from jobs import crypto


def encrypt_webhook_urls(apps, schema_editor):
    from jobs.notify.targets import masked_url

    AlertChannel = apps.get_model("jobs", "AlertChannel")
    for channel in AlertChannel.objects.filter(kind="webhook", url_token=""):
        channel.url_token = crypto.encrypt(channel.target)
        channel.target = masked_url(channel.target)
        channel.save(update_fields=["url_token", "target"])


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0019_alert_channels'),
    ]

    operations = [
        migrations.RenameField(
            model_name='alertchannel',
            old_name='apprise_url_token',
            new_name='url_token',
        ),
        migrations.AlterField(
            model_name='alertchannel',
            name='target',
            field=models.CharField(help_text='The e-mail addresses, or the webhook or Apprise URL masked.', max_length=2000),
        ),
        migrations.RunPython(encrypt_webhook_urls, migrations.RunPython.noop, elidable=True),
    ]

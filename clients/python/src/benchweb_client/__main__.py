from benchweb_client.cli import main

main()

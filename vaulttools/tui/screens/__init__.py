"""The app's screens: the main screen and the modal dialogs."""
